//! A Docker engine that cannot remove containers: a proxy on a Unix socket in front of the real
//! engine that forwards every request unchanged (hijacked `exec`/`attach` streams included) except
//! `DELETE /containers/{id}`, which it answers `500` itself. Tests point pitcrew's
//! `[sandbox] docker_host` at it to see what a job does when its sandbox cannot be removed.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Mutex, watch};

/// The engine's answer to a refused removal, as Docker words its own failures.
const REFUSAL: &str = r#"{"message":"injected failure: the container could not be removed"}"#;
/// The longest request head the proxy reads; Docker clients send far less.
const MAX_HEAD: usize = 64 * 1024;

#[derive(Debug)]
pub struct DockerProxy {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    refused: Arc<AtomicUsize>,
    shutdown: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl DockerProxy {
    /// Starts the proxy in front of the engine the tests use (`DOCKER_HOST` when it is a Unix
    /// socket, else `/var/run/docker.sock`), on a thread and runtime of its own.
    pub fn refusing_removal() -> io::Result<DockerProxy> {
        let upstream = match std::env::var("DOCKER_HOST") {
            Ok(host) if host.starts_with("unix://") => PathBuf::from(&host["unix://".len()..]),
            _ => PathBuf::from("/var/run/docker.sock"),
        };
        let dir = tempfile::tempdir()?;
        let socket = dir.path().join("docker.sock");
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let listener = {
            let _entered = runtime.enter();
            UnixListener::bind(&socket)?
        };
        let refused = Arc::new(AtomicUsize::new(0));
        let (shutdown, mut stop) = watch::channel(false);
        let counter = Arc::clone(&refused);
        let thread = std::thread::Builder::new()
            .name("docker-proxy".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    loop {
                        tokio::select! {
                            _ = stop.changed() => break,
                            accepted = listener.accept() => {
                                let Ok((client, _)) = accepted else { continue };
                                let upstream = upstream.clone();
                                let counter = Arc::clone(&counter);
                                tokio::spawn(async move {
                                    // A broken connection only ends that connection.
                                    let _ = proxy(client, &upstream, &counter).await;
                                });
                            }
                        }
                    }
                });
            })?;
        Ok(DockerProxy {
            _dir: dir,
            socket,
            refused,
            shutdown,
            thread: Some(thread),
        })
    }

    /// The `DOCKER_HOST`-style address of the proxy.
    pub fn host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// How many removals it has refused so far.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

impl Drop for DockerProxy {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves one client connection: requests one at a time (HTTP/1.1 clients do not pipeline), the
/// engine's answers copied back as they come.
async fn proxy(client: UnixStream, upstream: &Path, refused: &AtomicUsize) -> io::Result<()> {
    let engine = UnixStream::connect(upstream).await?;
    let (client_read, client_write) = client.into_split();
    let (engine_read, mut engine_write) = engine.into_split();
    let client_write = Arc::new(Mutex::new(client_write));
    let back = Arc::clone(&client_write);
    let answers = tokio::spawn(async move {
        let mut engine_read = engine_read;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = engine_read.read(&mut buf).await?;
            let mut client = back.lock().await;
            if n == 0 {
                return client.shutdown().await;
            }
            client.write_all(&buf[..n]).await?;
        }
    });
    let mut client_read = BufReader::new(client_read);
    let result = async {
        loop {
            let Some(head) = read_head(&mut client_read).await? else {
                return Ok(());
            };
            let request = Head::parse(&head);
            if request.is_container_removal() {
                skip_body(&mut client_read, &request).await?;
                refused.fetch_add(1, Ordering::SeqCst);
                let answer = format!(
                    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{REFUSAL}",
                    REFUSAL.len()
                );
                client_write.lock().await.write_all(answer.as_bytes()).await?;
                continue;
            }
            engine_write.write_all(&head).await?;
            copy_body(&mut client_read, &mut engine_write, &request).await?;
            if request.upgrade {
                // A hijacked stream (`exec` start, `attach`): raw bytes both ways from here on.
                tokio::io::copy(&mut client_read, &mut engine_write).await?;
                return engine_write.shutdown().await;
            }
        }
    }
    .await;
    let _ = engine_write.shutdown().await;
    let _ = answers.await;
    result
}

/// The request line and headers, through the blank line; `None` when the client closed first.
async fn read_head<R: AsyncBufReadExt + Unpin>(reader: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut head = Vec::new();
    loop {
        let start = head.len();
        let n = reader.read_until(b'\n', &mut head).await?;
        if n == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(io::Error::new(io::ErrorKind::UnexpectedEof, "request head cut short"))
            };
        }
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "request head too long"));
        }
        if &head[start..] == b"\r\n" || &head[start..] == b"\n" {
            return Ok(Some(head));
        }
    }
}

/// What the proxy needs to know of a request.
struct Head {
    method: String,
    path: String,
    content_length: u64,
    chunked: bool,
    upgrade: bool,
}

impl Head {
    fn parse(head: &[u8]) -> Head {
        let text = String::from_utf8_lossy(head);
        let mut lines = text.lines();
        let mut first = lines.next().unwrap_or_default().split_whitespace();
        let method = first.next().unwrap_or_default().to_owned();
        let path = first.next().unwrap_or_default().to_owned();
        let mut parsed = Head {
            method,
            path,
            content_length: 0,
            chunked: false,
            upgrade: false,
        };
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => parsed.content_length = value.parse().unwrap_or(0),
                "transfer-encoding" => parsed.chunked = value.eq_ignore_ascii_case("chunked"),
                "upgrade" => parsed.upgrade = true,
                _ => {}
            }
        }
        parsed
    }

    /// `DELETE /containers/{id}` (behind an API version prefix or not), not a sub-resource.
    fn is_container_removal(&self) -> bool {
        if self.method != "DELETE" {
            return false;
        }
        let path = self.path.split('?').next().unwrap_or_default();
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let segments = match segments.first() {
            Some(version) if version.starts_with('v') => &segments[1..],
            _ => &segments[..],
        };
        matches!(segments, ["containers", id] if !id.is_empty())
    }
}

/// Copies the request's body (by length, or chunk by chunk through the last chunk's trailers).
async fn copy_body<R, W>(reader: &mut R, writer: &mut W, head: &Head) -> io::Result<()>
where
    R: AsyncBufReadExt + Unpin,
    W: AsyncWriteExt + Unpin,
{
    if !head.chunked {
        let mut body = reader.take(head.content_length);
        tokio::io::copy(&mut body, writer).await?;
        return Ok(());
    }
    loop {
        let mut size_line = Vec::new();
        reader.read_until(b'\n', &mut size_line).await?;
        writer.write_all(&size_line).await?;
        let size_text = String::from_utf8_lossy(&size_line);
        let size_text = size_text.trim().split(';').next().unwrap_or_default();
        let size = u64::from_str_radix(size_text, 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
        if size == 0 {
            // Trailers, through the blank line.
            loop {
                let mut line = Vec::new();
                reader.read_until(b'\n', &mut line).await?;
                writer.write_all(&line).await?;
                if line == b"\r\n" || line == b"\n" || line.is_empty() {
                    return Ok(());
                }
            }
        }
        let mut chunk = reader.take(size + 2);
        tokio::io::copy(&mut chunk, writer).await?;
    }
}

/// Reads and drops the request's body.
async fn skip_body<R: AsyncBufReadExt + Unpin>(reader: &mut R, head: &Head) -> io::Result<()> {
    copy_body(reader, &mut tokio::io::sink(), head).await
}

#[cfg(test)]
mod tests {
    use super::Head;

    #[test]
    fn only_the_removal_of_a_container_is_refused() {
        let removal = |request: &str| Head::parse(request.as_bytes()).is_container_removal();
        assert!(removal(
            "DELETE /v1.41/containers/abc123?force=true&v=true HTTP/1.1\r\nHost: d\r\n\r\n"
        ));
        assert!(removal("DELETE /containers/pitcrew-1 HTTP/1.1\r\n\r\n"));
        assert!(!removal("POST /v1.41/containers/abc123/kill HTTP/1.1\r\n\r\n"));
        assert!(!removal("DELETE /v1.41/images/busybox HTTP/1.1\r\n\r\n"));
        assert!(!removal("GET /v1.41/containers/abc123/json HTTP/1.1\r\n\r\n"));
    }
}
