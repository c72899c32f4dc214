//! Posting a webhook delivery to a running `pitcrew serve`, signed as GitHub signs it.

use pitcrew::server::signature::sign;
use secrecy::SecretString;

/// Posts `body` as delivery `delivery` of `event` to `server_url/webhook`, signed with `secret`
/// (or carrying `signature` as it is); returns the status and the response text.
pub(crate) async fn post(
    server_url: &str,
    secret: &str,
    event: &str,
    delivery: &str,
    body: Vec<u8>,
    signature: Option<String>,
) -> (u16, String) {
    let signature = signature.unwrap_or_else(|| sign(&SecretString::from(secret), &body));
    let response = reqwest::Client::new()
        .post(format!("{server_url}/webhook"))
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", delivery)
        .header("X-Hub-Signature-256", signature)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("posting delivery {delivery}: {e}"));
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

// The edge under hostile clients (the security issue "anyone can exhaust the server's memory and
// connections without a signature"). Protocol-level tests run the server in this process; those
// about the process itself (its memory, its file limit, SIGTERM) run `pitcrew serve` in a child:
// this test binary again, running [`serve_child`].

mod edge {
    #![expect(clippy::unwrap_used, reason = "tests")]

    use std::io::{BufRead, BufReader};
    use std::net::SocketAddr;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use pitcrew::server::signature::sign;
    use pitcrew_tests::fake_github::FakeGithub;
    use pitcrew_tests::server_config::ServerOverrides;
    use secrecy::SecretString;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::mpsc;

    use super::post;
    use crate::suite::serving::serve;

    const SECRET: &str = "a webhook secret for the edge tests";
    /// Turns a hang into a failure; never what a test asserts.
    const HANG: Duration = Duration::from_secs(60);
    /// Where [`serve_child`] gets its settings, one `KEY=VALUE` a line; set only in the child.
    const CHILD_SETTINGS: &str = "PITCREW_TEST_SERVE_CHILD_SETTINGS";

    fn overrides(github: &FakeGithub, data: &std::path::Path) -> ServerOverrides {
        ServerOverrides::new(github, SECRET, data)
    }

    /// Reads until the server closes the connection; what it sent before.
    async fn until_closed(stream: &mut TcpStream) -> String {
        let mut seen = Vec::new();
        let mut buffer = [0_u8; 4096];
        loop {
            match tokio::time::timeout(HANG, stream.read(&mut buffer)).await {
                Ok(Ok(0) | Err(_)) => return String::from_utf8_lossy(&seen).into_owned(),
                Ok(Ok(n)) => seen.extend_from_slice(&buffer[..n]),
                Err(_) => panic!(
                    "the server kept the connection open; it sent {:?}",
                    String::from_utf8_lossy(&seen)
                ),
            }
        }
    }

    async fn connect(addr: SocketAddr, sent: &[u8]) -> TcpStream {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(sent).await.unwrap();
        stream
    }

    /// Half-sent request lines, headers and bodies, and idle kept-alive connections, all stayed open
    /// for over 130 s.
    #[tokio::test]
    async fn slow_and_idle_connections_are_closed_after_their_timeouts() {
        let github = FakeGithub::builder().start();
        let data = tempfile::tempdir().unwrap();
        let server = serve(
            &overrides(&github, data.path())
                .set("server.header_timeout", "1s")
                .set("server.body_timeout", "1s")
                .set("server.idle_timeout", "1s"),
        )
        .await;
        let addr = server.addr();
        let mut line = connect(addr, b"POST /webh").await;
        let mut headers = connect(
            addr,
            b"POST /webhook HTTP/1.1\r\nHost: pitcrew\r\nX-GitHub-Event: ping\r\n",
        )
        .await;
        let signature = sign(&SecretString::from(SECRET), b"{}");
        let mut body = connect(
            addr,
            format!(
                "POST /webhook HTTP/1.1\r\nHost: pitcrew\r\nX-Hub-Signature-256: {signature}\r\n\
                 Content-Length: 100\r\n\r\n{{\"zen\":"
            )
            .as_bytes(),
        )
        .await;
        let mut idle = connect(addr, b"GET /healthz HTTP/1.1\r\nHost: pitcrew\r\n\r\n").await;
        let mut silent = TcpStream::connect(addr).await.unwrap();

        let (line, headers, body, idle, silent) = tokio::join!(
            until_closed(&mut line),
            until_closed(&mut headers),
            until_closed(&mut body),
            until_closed(&mut idle),
            until_closed(&mut silent),
        );
        assert_eq!((line.as_str(), headers.as_str(), silent.as_str()), ("", "", ""));
        assert!(body.starts_with("HTTP/1.1 408"), "{body}");
        // The kept-alive connection had its answer, then was closed for idling.
        assert!(idle.starts_with("HTTP/1.1 200") && idle.ends_with("ok"), "{idle}");
        server.shutdown(Duration::from_secs(5)).await;
    }

    /// Ambiguous framing, oversized headers and payloads the dispatcher cannot read were answered
    /// 202 (or read at all) and stored.
    #[tokio::test]
    async fn smuggling_framing_huge_headers_and_unreadable_json_are_refused_and_not_stored() {
        let github = FakeGithub::builder().start();
        let data = tempfile::tempdir().unwrap();
        let server = serve(&overrides(&github, data.path())).await;
        let url = server.url();

        let body = br#"{"action":"created","zen":"x"}"#;
        let signature = sign(&SecretString::from(SECRET), body);
        let request = format!(
            "POST /webhook HTTP/1.1\r\nHost: pitcrew\r\nX-GitHub-Event: issue_comment\r\n\
             X-GitHub-Delivery: cl-te\r\nX-Hub-Signature-256: {signature}\r\nContent-Length: 5\r\n\
             Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n",
            body.len(),
            String::from_utf8_lossy(body)
        );
        let mut stream = connect(server.addr(), request.as_bytes()).await;
        let answer = until_closed(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("both Content-Length and Transfer-Encoding"), "{answer}");

        let huge = reqwest::Client::new()
            .post(format!("{url}/webhook"))
            .header("X-GitHub-Event", "issue_comment")
            .header("X-GitHub-Delivery", "huge-headers")
            .header("X-Hub-Signature-256", &signature)
            .header("X-Padding", "a".repeat(100 * 1024))
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(huge.status().as_u16(), 431);

        let deep = format!(
            "{{\"action\":\"created\",\"a\":{}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let (status, text) = post(&url, SECRET, "issue_comment", "deep", deep.into_bytes(), None).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("recursion limit exceeded"), "{text}");
        let number = br#"{"action":"created","comment":{"id":1e999999}}"#.to_vec();
        let (status, text) = post(&url, SECRET, "issue_comment", "number", number, None).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("number out of range"), "{text}");

        assert_eq!(server.store().count_deliveries().await.unwrap(), 0);
        server.shutdown(Duration::from_secs(5)).await;
    }

    /// A `pitcrew serve` process: this test binary again, running [`serve_child`].
    struct ServeProcess {
        child: Option<std::process::Child>,
        addr: SocketAddr,
        /// Its log lines, as they come.
        log: mpsc::UnboundedReceiver<String>,
    }

    impl ServeProcess {
        /// Starts it with `settings`; with `open_files`, under that soft open-file limit.
        fn start(settings: &ServerOverrides, open_files: Option<u32>) -> ServeProcess {
            let exe = std::env::current_exe().unwrap();
            let args = [
                "--exact",
                "suite::webhook::edge::serve_child",
                "--ignored",
                "--nocapture",
            ];
            let mut command = match open_files {
                Some(n) => {
                    let mut command = Command::new("sh");
                    command
                        .arg("-c")
                        .arg(format!("ulimit -Sn {n} && exec \"$0\" \"$@\""))
                        .arg(exe)
                        .args(args);
                    command
                }
                None => {
                    let mut command = Command::new(exe);
                    command.args(args);
                    command
                }
            };
            let mut child = command
                .env(CHILD_SETTINGS, settings.build().join("\n"))
                .env("RUST_LOG", "info")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let stderr = child.stderr.take().unwrap();
            let (lines, log) = mpsc::unbounded_channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let _ = lines.send(line);
                }
            });
            let (found, addr) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                // libtest prints "test … ... " before the child's line, without a newline.
                let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
                let addr = lines.by_ref().find_map(|line| {
                    line.rsplit_once("LISTENING ")
                        .map(|(_, addr)| addr.trim().parse::<SocketAddr>().unwrap())
                });
                let _ = found.send(addr);
                // Read on to the end: a child writing to a closed pipe would fail.
                lines.for_each(drop);
            });
            let addr = addr.recv_timeout(HANG).unwrap();
            let Some(addr) = addr else {
                let _ = child.kill();
                panic!("the child server did not start");
            };
            ServeProcess {
                child: Some(child),
                addr,
                log,
            }
        }

        fn pid(&self) -> i32 {
            i32::try_from(self.child.as_ref().unwrap().id()).unwrap()
        }

        /// `VmHWM`, the most memory the process has held, in KiB.
        fn peak_rss_kib(&self) -> u64 {
            let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
            let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
            line.split_whitespace().nth(1).unwrap().parse().unwrap()
        }

        /// Waits for a log line containing `text`.
        async fn logged(&mut self, text: &str) -> String {
            let wait = async {
                while let Some(line) = self.log.recv().await {
                    if line.contains(text) {
                        return line;
                    }
                }
                panic!("the child's log ended without {text:?}");
            };
            tokio::time::timeout(HANG, wait).await.unwrap()
        }

        /// Sends SIGTERM and waits for the process to end; its exit status.
        fn terminate(mut self) -> (std::process::ExitStatus, Vec<String>) {
            let pid = self.pid();
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM).unwrap();
            let (done, status) = std::sync::mpsc::channel();
            let mut child = self.child.take().unwrap();
            std::thread::spawn(move || {
                let _ = done.send(child.wait());
            });
            match status.recv_timeout(HANG) {
                Ok(status) => {
                    let mut log = Vec::new();
                    while let Ok(line) = self.log.try_recv() {
                        log.push(line);
                    }
                    (status.unwrap(), log)
                }
                Err(_) => {
                    // Not left running: the waiting thread reaps it once killed.
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                    panic!("pitcrew serve did not stop after SIGTERM");
                }
            }
        }
    }

    impl Drop for ServeProcess {
        fn drop(&mut self) {
            if let Some(mut child) = self.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// The server of [`ServeProcess`]; does nothing when run on its own.
    #[tokio::test(flavor = "multi_thread")]
    #[ignore = "run by the tests above in a child process"]
    async fn serve_child() {
        let Ok(settings) = std::env::var(CHILD_SETTINGS) else {
            return;
        };
        pitcrew::logging::init(pitcrew::logging::LogFormat::Pretty);
        let overrides: Vec<String> = settings.lines().map(str::to_owned).collect();
        let config = pitcrew::config::Config::load(pitcrew::config::LoadOptions {
            config_path: None,
            env: &std::collections::BTreeMap::new(),
            overrides: &overrides,
        })
        .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Before the server starts: a SIGTERM right after `LISTENING` must find them.
        let signals = pitcrew::server::StopSignals::install().unwrap();
        let running = pitcrew::serve::start(
            config,
            pitcrew::serve::ServeOptions {
                listener: Some(listener),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        println!("LISTENING {addr}");
        running.run_until(signals).await.unwrap();
    }

    fn metric(text: &str, outcome: &str) -> u64 {
        let prefix = format!("pitcrew_webhook_deliveries_total{{event=\"unverified\",outcome=\"{outcome}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .map_or(0, |n| n.trim().parse().unwrap())
    }

    /// 60 unsigned clients took the server from 18 MiB to 1.5 GiB, held as long as they stayed
    /// connected.
    #[tokio::test]
    async fn sixty_unverified_large_bodies_keep_memory_bounded_and_past_the_cap_get_503() {
        const CLIENTS: usize = 60;
        const DECLARED: usize = 25 * 1024 * 1024;
        let github = FakeGithub::builder().start();
        let data = tempfile::tempdir().unwrap();
        let server = ServeProcess::start(&overrides(&github, data.path()), None);
        let addr = server.addr;
        let forged = format!("sha256={}", "0".repeat(64));
        let mut clients = Vec::new();
        for n in 0..CLIENTS {
            let head = format!(
                "POST /webhook HTTP/1.1\r\nHost: pitcrew\r\nX-GitHub-Event: issue_comment\r\n\
                 X-GitHub-Delivery: flood-{n}\r\nX-Hub-Signature-256: {forged}\r\nContent-Length: {DECLARED}\r\n\
                 Connection: close\r\n\r\n"
            );
            let stream = connect(addr, head.as_bytes()).await;
            clients.push(tokio::spawn(async move {
                let (mut read, mut write) = stream.into_split();
                // Writes until the whole body is sent or the server stops reading, and hands the
                // socket's half back open: dropping it would half-close the connection, and hyper
                // drops a request whose client half-closed before the answer.
                let writer = tokio::spawn(async move {
                    let chunk = vec![b' '; 256 * 1024];
                    for _ in 0..DECLARED / chunk.len() {
                        if write.write_all(&chunk).await.is_err() {
                            break;
                        }
                    }
                    write
                });
                let mut answer = Vec::new();
                let read = tokio::time::timeout(HANG, read.read_to_end(&mut answer)).await;
                writer.abort();
                let answer = String::from_utf8_lossy(&answer);
                format!(
                    "{:?} {}",
                    read.map(|r| r.map_err(|e| e.kind())),
                    answer.lines().next().unwrap_or("")
                )
            }));
        }
        let mut answers = Vec::new();
        for client in clients {
            answers.push(client.await.unwrap());
        }
        let peak = server.peak_rss_kib();
        let metrics = reqwest::get(format!("http://{addr}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let (busy, unauthorized) = (metric(&metrics, "busy"), metric(&metrics, "unauthorized"));
        assert!(busy > 0, "{metrics}");
        assert_eq!(busy + unauthorized, CLIENTS as u64, "{metrics}\n{answers:#?}");
        // 64 MiB of unverified bodies at most, on a server of some 20 MiB.
        assert!(peak < 300 * 1024, "peak RSS {} MiB", peak / 1024);
        println!(
            "peak RSS under {CLIENTS} x 25 MiB unverified bodies: {} MiB",
            peak / 1024
        );
    }

    /// 1,100 idle connections (over the usual 1,024-file limit) stopped `accept`: signed deliveries
    /// and `/healthz` timed out, with nothing in the log.
    #[tokio::test]
    async fn eleven_hundred_idle_connections_do_not_lock_out_a_signed_delivery() {
        use nix::sys::resource::{Resource, getrlimit, setrlimit};
        // This process holds the 1,100 connections: it needs the files for them.
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        if soft < 2048 {
            setrlimit(Resource::RLIMIT_NOFILE, 2048.min(hard), hard).unwrap();
        }
        let github = FakeGithub::builder().start();
        let data = tempfile::tempdir().unwrap();
        let settings = overrides(&github, data.path())
            .set("server.idle_timeout", "1h")
            .set("server.header_timeout", "1h");
        let mut server = ServeProcess::start(&settings, Some(1024));
        let mut idle = Vec::new();
        for _ in 0..1100 {
            let stream = tokio::time::timeout(HANG, TcpStream::connect(server.addr)).await;
            idle.push(stream.unwrap().unwrap());
        }
        let url = format!("http://{}", server.addr);
        let client = reqwest::Client::builder().timeout(HANG).build().unwrap();
        let health = client.get(format!("{url}/healthz")).send().await.unwrap();
        assert_eq!(health.status().as_u16(), 200);
        let ping = post(
            &url,
            SECRET,
            "ping",
            "ping-1",
            br#"{"zen":"Keep it simple."}"#.to_vec(),
            None,
        );
        let (status, text) = tokio::time::timeout(HANG, ping).await.unwrap();
        assert_eq!((status, text.contains("Keep it simple.")), (200, true), "{text}");
        let line = server.logged("connection limit").await;
        assert!(line.contains("WARN"), "{line}");
        drop(idle);
    }

    /// SIGTERM with one partial request open never finished, still running 120 s later with a
    /// 60 s grace.
    #[tokio::test]
    async fn sigterm_stops_within_the_grace_with_a_partial_request_open() {
        let github = FakeGithub::builder().start();
        let data = tempfile::tempdir().unwrap();
        let settings = overrides(&github, data.path())
            .set("server.shutdown_grace", "1s")
            .set("server.header_timeout", "1h")
            .set("server.idle_timeout", "1h");
        let server = ServeProcess::start(&settings, None);
        let _partial = connect(server.addr, b"POST /webhook HTTP/1.1\r\nHost: pitcrew\r\nContent-Le").await;
        // Answered on a later connection: the partial one was accepted before it.
        let health = reqwest::get(format!("http://{}/healthz", server.addr)).await.unwrap();
        assert_eq!(health.status().as_u16(), 200);
        let (exit, log) = server.terminate();
        assert!(exit.success(), "{exit}:\n{}", log.join("\n"));
    }
}
