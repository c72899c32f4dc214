//! The HTTP server's connections: the accept loop, the connection limit, the timeouts a connection
//! lives under, the framing check and the stop.
//!
//! Anyone can connect, so nothing a stranger sends may hold the server for long:
//! - a connection with no request under way (just opened, or kept alive after a response) is closed
//!   after `idle_timeout`; a request line and headers must be in within `header_timeout` of their
//!   first byte (the body's time is the webhook route's `body_timeout`). [`Timed`] enforces both on
//!   the socket, as the request's phase ([`Watch`]) says;
//! - headers are capped at [`MAX_HEADER_BYTES`] (hyper answers 431);
//! - connections are capped below the open-file limit ([`connection_limit`]); at the cap the
//!   longest-idle connection (else the oldest still sending headers) is closed to make room, so
//!   idle sockets cannot lock GitHub out; connections mid-request are never closed for this;
//! - a request with both `Content-Length` and `Transfer-Encoding` is refused (400): a proxy in front
//!   trusting the length would see another request boundary than we do. hyper drops one of the two
//!   headers before the route sees them, so the head is looked at as it arrives ([`HeadSniffer`]).
//!
//! On stop the listener closes and each connection finishes its request; the caller bounds how
//! long that may take (the shutdown grace) and drops what is left.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

/// The most bytes a request line and its headers may take.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The most header lines a request may have.
pub const MAX_HEADERS: usize = 100;

/// Open files kept free of connections: the store, git, Docker's socket, mirrors' pack files.
const FILE_HEADROOM: u64 = 256;

/// The most connections whatever the open-file limit (an unlimited one included).
const MAX_AUTOMATIC_CONNECTIONS: u64 = 65_536;

/// How often hitting the connection limit is logged at most.
const LIMIT_LOG_EVERY: Duration = Duration::from_secs(60);

/// What connections live under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

/// The connections allowed at once: `configured`, or from the open-file limit (`RLIMIT_NOFILE`'s
/// soft value) less a quarter of it, at least [`FILE_HEADROOM`], for everything else the server
/// opens. A configured value above that is lowered to it: past the file limit `accept` fails and
/// nobody, GitHub included, gets in.
pub fn connection_limit(configured: Option<u32>) -> usize {
    let files = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(|(soft, _)| soft)
        .unwrap_or(1024);
    let most = files
        .saturating_sub((files / 4).max(FILE_HEADROOM))
        .clamp(16, MAX_AUTOMATIC_CONNECTIONS);
    let chosen = match configured {
        None => most,
        Some(n) if u64::from(n) > most => {
            tracing::warn!(
                configured = n,
                open_file_limit = files,
                using = most,
                "[server] max_connections is above what the open-file limit leaves room for; lowered"
            );
            most
        }
        Some(n) => u64::from(n),
    };
    usize::try_from(chosen).unwrap_or(usize::MAX)
}

/// Where a connection's current request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No request under way: nothing sent yet, or the last response given.
    Idle,
    /// A request's line and headers are arriving.
    Head,
    /// The request is with the routes (its body is theirs to time).
    Busy,
}

struct WatchState {
    phase: Phase,
    since: Instant,
    sniffer: HeadSniffer,
}

/// One connection's phase, shared by its socket ([`Timed`]), its service and the accept loop.
struct Watch {
    state: Mutex<WatchState>,
    /// Cancelled to close the connection at once (the accept loop needs its slot).
    evict: CancellationToken,
}

impl Watch {
    fn new() -> Watch {
        Watch {
            state: Mutex::new(WatchState {
                phase: Phase::Idle,
                since: Instant::now(),
                sniffer: HeadSniffer::default(),
            }),
            evict: CancellationToken::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
        let state = self.state();
        match state.phase {
            Phase::Idle => Some(state.since + limits.idle_timeout),
            Phase::Head => Some(state.since + limits.header_timeout),
            Phase::Busy => None,
        }
    }

    fn received(&self, bytes: &[u8]) {
        let mut state = self.state();
        if state.phase == Phase::Idle {
            state.phase = Phase::Head;
            state.since = Instant::now();
            state.sniffer = HeadSniffer::default();
        }
        if state.phase == Phase::Head {
            state.sniffer.feed(bytes);
        }
    }

    /// The routes have the request: what its head showed, when it was seen.
    fn begin(&self) -> Option<Framing> {
        let mut state = self.state();
        state.phase = Phase::Busy;
        state.since = Instant::now();
        std::mem::take(&mut state.sniffer).outcome
    }

    fn end(&self) {
        let mut state = self.state();
        state.phase = Phase::Idle;
        state.since = Instant::now();
    }

    /// How much this connection deserves its slot: an idle one least, the longest idle first; then
    /// the oldest still sending headers; `None` (never closed for room) once it is with the routes.
    fn eviction_rank(&self) -> Option<(u8, Instant)> {
        let state = self.state();
        match state.phase {
            Phase::Idle => Some((0, state.since)),
            Phase::Head => Some((1, state.since)),
            Phase::Busy => None,
        }
    }
}

/// How a request's body is framed, as its head said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// At most one of `Content-Length` and `Transfer-Encoding`.
    Unambiguous,
    /// Both.
    Ambiguous,
}

/// Collects a request's head as it arrives, and once it is complete reads it with httparse (the
/// parser hyper uses) for the framing headers. Gives up, leaving no outcome, on a head too large or
/// malformed (hyper refuses those itself) or after a few false ends.
#[derive(Default)]
struct HeadSniffer {
    head: Vec<u8>,
    tries: u8,
    done: bool,
    outcome: Option<Framing>,
}

impl HeadSniffer {
    /// A head with leading blank lines looks complete early; a few of those are tolerated.
    const MAX_TRIES: u8 = 4;

    fn feed(&mut self, bytes: &[u8]) {
        if self.done {
            return;
        }
        let scan_from = self.head.len().saturating_sub(2);
        let room = (MAX_HEADER_BYTES + 4).saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        // A head ends at an empty line; httparse, like hyper, accepts bare LF line ends.
        let mut at = scan_from;
        while let Some(end) = find_blank_line(&self.head[at..]) {
            at += end;
            self.tries += 1;
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut request = httparse::Request::new(&mut headers);
            match request.parse(&self.head) {
                Ok(httparse::Status::Complete(_)) => {
                    let has = |name: &str| request.headers.iter().any(|h| h.name.eq_ignore_ascii_case(name));
                    self.outcome = Some(if has("content-length") && has("transfer-encoding") {
                        Framing::Ambiguous
                    } else {
                        Framing::Unambiguous
                    });
                    self.finish();
                    return;
                }
                Ok(httparse::Status::Partial) if self.tries < Self::MAX_TRIES => {}
                Ok(httparse::Status::Partial) | Err(_) => {
                    self.finish();
                    return;
                }
            }
        }
        if self.head.len() > MAX_HEADER_BYTES {
            self.finish();
        }
    }

    fn finish(&mut self) {
        self.done = true;
        self.head = Vec::new();
    }
}

/// The offset just past the first `\n\n` or `\n\r\n` in `bytes`.
fn find_blank_line(bytes: &[u8]) -> Option<usize> {
    bytes.iter().enumerate().find_map(|(i, &b)| {
        if b != b'\n' {
            return None;
        }
        match bytes.get(i + 1..) {
            Some([b'\n', ..]) => Some(i + 2),
            Some([b'\r', b'\n', ..]) => Some(i + 3),
            _ => None,
        }
    })
}

/// A socket that fails reads and writes with `TimedOut` once its connection's phase deadline
/// passes (a slow client cannot stretch it by trickling bytes: the deadline is counted from the
/// phase's start, not from the last byte), and tells the [`Watch`] what arrives.
struct Timed {
    inner: TcpStream,
    watch: Arc<Watch>,
    limits: ConnectionLimits,
    sleep: Pin<Box<Sleep>>,
}

impl Timed {
    fn new(inner: TcpStream, watch: Arc<Watch>, limits: ConnectionLimits) -> Timed {
        Timed {
            inner,
            watch,
            limits,
            sleep: Box::pin(tokio::time::sleep(Duration::ZERO)),
        }
    }

    /// `Err` once the deadline has passed; else arms the timer so the task wakes at the deadline.
    fn check(&mut self, cx: &mut Context<'_>, pending: bool) -> Result<(), io::Error> {
        let Some(deadline) = self.watch.deadline(&self.limits) else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the client was too slow"));
        }
        if pending {
            self.sleep.as_mut().reset(deadline);
            if self.sleep.as_mut().poll(cx).is_ready() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "the client was too slow"));
            }
        }
        Ok(())
    }
}

impl AsyncRead for Timed {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Err(error) = this.check(cx, false) {
            return Poll::Ready(Err(error));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let new = &buf.filled()[before..];
                if !new.is_empty() {
                    this.watch.received(new);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => match this.check(cx, true) {
                Ok(()) => Poll::Pending,
                Err(error) => Poll::Ready(Err(error)),
            },
        }
    }
}

impl AsyncWrite for Timed {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Pending => match this.check(cx, true) {
                Ok(()) => Poll::Pending,
                Err(error) => Poll::Ready(Err(error)),
            },
            ready => ready,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Pending => match this.check(cx, true) {
                Ok(()) => Poll::Pending,
                Err(error) => Poll::Ready(Err(error)),
            },
            ready => ready,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending => match this.check(cx, true) {
                Ok(()) => Poll::Pending,
                Err(error) => Poll::Ready(Err(error)),
            },
            ready => ready,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Logs hitting the connection limit at most once a [`LIMIT_LOG_EVERY`], with what happened since.
struct LimitLog {
    last: Option<Instant>,
    evicted: u64,
    waited: u64,
}

impl LimitLog {
    fn hit(&mut self, limit: usize, evicted: bool) {
        if evicted {
            self.evicted += 1;
        } else {
            self.waited += 1;
        }
        if self.last.is_some_and(|at| at.elapsed() < LIMIT_LOG_EVERY) {
            return;
        }
        tracing::warn!(
            limit,
            idle_closed = self.evicted,
            waited_for_a_slot = self.waited,
            "the connection limit ([server] max_connections) is reached: closing idle connections to make room"
        );
        self.last = Some(Instant::now());
        self.evicted = 0;
        self.waited = 0;
    }
}

type Watches = Arc<Mutex<HashMap<u64, Arc<Watch>>>>;

/// Closes the connection that least deserves its slot; false when all are mid-request.
fn evict_one(watches: &Watches) -> bool {
    let watches = watches.lock().unwrap_or_else(PoisonError::into_inner);
    let victim = watches
        .values()
        .filter(|watch| !watch.evict.is_cancelled())
        .filter_map(|watch| watch.eviction_rank().map(|rank| (rank, watch)))
        .min_by_key(|(rank, _)| *rank);
    match victim {
        Some((_, watch)) => {
            watch.evict.cancel();
            true
        }
        None => false,
    }
}

/// Serves `router` on `listener` until `stop`, then lets each connection finish its request. The
/// future ends when the last connection has; dropping it closes them all at once.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stop: CancellationToken,
) -> io::Result<()> {
    let mut tasks = JoinSet::new();
    let watches: Watches = Arc::default();
    let mut next_id = 0_u64;
    let mut limit_log = LimitLog {
        last: None,
        evicted: 0,
        waited: 0,
    };
    loop {
        while tasks.try_join_next().is_some() {}
        if tasks.len() >= limits.max_connections.max(1) {
            let evicted = evict_one(&watches);
            limit_log.hit(limits.max_connections, evicted);
            // Either way a slot frees when a connection ends: the one just closed, or one whose
            // request finishes (new connections wait in the listen backlog meanwhile).
            tokio::select! {
                () = stop.cancelled() => break,
                _ = tasks.join_next() => continue,
            }
        }
        let (stream, _peer) = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of files (EMFILE, ENFILE) or a connection reset before it was accepted:
                    // neither ends the server. A short pause keeps a full file table from spinning.
                    tracing::warn!(%error, "could not accept a connection");
                    tokio::select! {
                        () = stop.cancelled() => break,
                        () = tokio::time::sleep(Duration::from_millis(50)) => continue,
                    }
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let id = next_id;
        next_id += 1;
        let watch = Arc::new(Watch::new());
        watches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Arc::clone(&watch));
        let router = router.clone();
        let stop = stop.clone();
        let watches = Arc::clone(&watches);
        tasks.spawn(async move {
            connection(stream, router, Arc::clone(&watch), limits, stop).await;
            watches.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        });
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
    Ok(())
}

async fn connection(
    stream: TcpStream,
    router: Router,
    watch: Arc<Watch>,
    limits: ConnectionLimits,
    stop: CancellationToken,
) {
    let io = TokioIo::new(Timed::new(stream, Arc::clone(&watch), limits));
    let service_watch = Arc::clone(&watch);
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        let watch = Arc::clone(&service_watch);
        let mut router = router.clone();
        async move {
            let framing = watch.begin();
            let response = match refuse_framing(framing, &request) {
                Some(refusal) => refusal,
                None => {
                    let request = request.map(Body::new);
                    match tower_service::Service::call(&mut router, request).await {
                        Ok(response) => response,
                        Err(never) => match never {},
                    }
                }
            };
            watch.end();
            Ok::<_, Infallible>(response)
        }
    });
    let mut builder = http1::Builder::new();
    builder
        // The phases' deadlines are [`Timed`]'s: hyper's own header timeout would also count the
        // idle time before a request as header time.
        .header_read_timeout(None)
        .max_headers(MAX_HEADERS)
        .max_header_size(MAX_HEADER_BYTES)
        .max_buf_size(MAX_HEADER_BYTES + 8 * 1024);
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let ended = tokio::select! {
        ended = connection.as_mut() => ended,
        () = watch.evict.cancelled() => return,
        () = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            tokio::select! {
                ended = connection.as_mut() => ended,
                () = watch.evict.cancelled() => return,
            }
        }
    };
    if let Err(error) = ended {
        tracing::debug!(%error, "connection ended with an error");
    }
}

/// The 400 for a request whose body's framing is ambiguous; `None` for the rest. A request whose
/// head was not seen arriving (it came pipelined behind another) may not use `Transfer-Encoding`
/// at all, since whether it also had a `Content-Length` cannot be known.
fn refuse_framing<B>(framing: Option<Framing>, request: &Request<B>) -> Option<Response<Body>> {
    let chunked = request.headers().contains_key(header::TRANSFER_ENCODING);
    let message = match framing {
        Some(Framing::Ambiguous) => "a request must not have both Content-Length and Transfer-Encoding",
        None if chunked => "a pipelined request must not use Transfer-Encoding",
        Some(Framing::Unambiguous) | None => return None,
    };
    tracing::info!(reason = message, "request refused");
    let mut response = Response::new(Body::from(format!("{{\"error\":\"{message}\"}}")));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    Some(response)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn sniff(chunks: &[&[u8]]) -> Option<Framing> {
        let mut sniffer = HeadSniffer::default();
        for chunk in chunks {
            sniffer.feed(chunk);
        }
        sniffer.outcome
    }

    #[test]
    fn both_framing_headers_are_seen_whatever_their_order_case_and_chunking() {
        let both =
            b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n";
        assert_eq!(sniff(&[both]), Some(Framing::Ambiguous));
        let split: Vec<&[u8]> = both.chunks(3).collect();
        assert_eq!(sniff(&split), Some(Framing::Ambiguous));
        let reversed = b"POST / HTTP/1.1\nTRANSFER-ENCODING: chunked\nCONTENT-LENGTH: 5\n\n";
        assert_eq!(sniff(&[reversed]), Some(Framing::Ambiguous));
        let one = b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(sniff(&[one]), Some(Framing::Unambiguous));
        assert_eq!(sniff(&[b"POST / HTTP/1.1\r\nContent-Le"]), None);
    }

    #[test]
    fn the_sniffer_gives_up_on_oversized_or_malformed_heads() {
        let mut huge = b"GET / HTTP/1.1\r\nX: ".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_HEADER_BYTES + 10));
        let mut sniffer = HeadSniffer::default();
        sniffer.feed(&huge);
        assert!(sniffer.done && sniffer.outcome.is_none() && sniffer.head.is_empty());
        assert_eq!(sniff(&[b"\x00\x01 garbage\r\n\r\n"]), None);
    }

    #[test]
    fn a_configured_connection_limit_stays_below_the_file_limit() {
        let (soft, _) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
        let automatic = connection_limit(None) as u64;
        assert!(automatic < soft.max(17), "{automatic} of {soft}");
        assert_eq!(connection_limit(Some(10)), 10);
        assert_eq!(connection_limit(Some(u32::MAX)) as u64, automatic);
    }

    #[test]
    fn idle_connections_are_evicted_before_those_sending_headers_and_busy_ones_never() {
        let watches: Watches = Arc::default();
        let idle = Arc::new(Watch::new());
        let head = Arc::new(Watch::new());
        head.received(b"GET / HT");
        let busy = Arc::new(Watch::new());
        busy.begin();
        for (id, watch) in [(0, &busy), (1, &head), (2, &idle)] {
            watches.lock().unwrap().insert(id, Arc::clone(watch));
        }
        assert!(evict_one(&watches));
        assert!(idle.evict.is_cancelled() && !head.evict.is_cancelled());
        assert!(evict_one(&watches));
        assert!(head.evict.is_cancelled());
        assert!(!evict_one(&watches));
        assert!(!busy.evict.is_cancelled());
    }
}
