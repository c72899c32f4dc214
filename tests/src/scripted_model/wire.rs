//! Wire helpers shared by both protocols: ids, splitting text into stream deltas, SSE and JSON
//! response bodies (including cut and aborted ones).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::stream;
use serde_json::Value;

/// Longest text delta, in characters; a delta otherwise runs to the next word.
const MAX_TEXT_PIECE: usize = 8;
/// Length of a tool-argument fragment, in characters (the live APIs send a few characters each).
const ARGUMENT_PIECE: usize = 5;
/// How long an aborted body waits before failing, so that hyper flushes what came before.
const ABORT_FLUSH: Duration = Duration::from_millis(20);

/// Deterministic, realistic-looking ids: the n-th id of a server is always the same.
#[derive(Debug, Default)]
pub(super) struct Ids {
    next: AtomicU64,
}

impl Ids {
    /// `prefix` followed by `len` base-62 characters.
    pub(super) fn base62(&self, prefix: &str, len: usize) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        self.generate(prefix, len, ALPHABET)
    }

    /// `prefix` followed by `len` lowercase hex digits.
    pub(super) fn hex(&self, prefix: &str, len: usize) -> String {
        self.generate(prefix, len, b"0123456789abcdef")
    }

    fn generate(&self, prefix: &str, len: usize, alphabet: &[u8]) -> String {
        let mut state = self.next.fetch_add(1, Ordering::Relaxed);
        let mut id = String::with_capacity(prefix.len() + len);
        id.push_str(prefix);
        let base = alphabet.len() as u64;
        for _ in 0..len {
            let n = splitmix64(&mut state);
            id.push(char::from(alphabet[(n % base) as usize]));
        }
        id
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seconds since the epoch, for `created` fields.
pub(super) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Splits text the way a tokenizer-driven stream does: each piece starts at a word with the
/// whitespace before it, and long words are broken up.
pub(super) fn text_pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut chars_in_piece = 0;
    let mut previous_was_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        let word_starts = space && !previous_was_space;
        if i > start && (word_starts || chars_in_piece >= MAX_TEXT_PIECE) {
            pieces.push(&text[start..i]);
            start = i;
            chars_in_piece = 0;
        }
        chars_in_piece += 1;
        previous_was_space = space;
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// Splits tool-argument text into short fragments, cutting through JSON tokens as the live APIs
/// do (always on character boundaries).
pub(super) fn argument_pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in text.char_indices().enumerate() {
        if count > 0 && count % ARGUMENT_PIECE == 0 {
            pieces.push(&text[start..i]);
            start = i;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// How a streamed body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// The body ends normally (the terminating chunk is sent).
    Clean,
    /// The connection is aborted: no terminating chunk.
    Abort,
}

/// A chunked body sending `frames` one write each, `delay` apart.
pub(super) fn paced_body(frames: Vec<String>, delay: Duration, ending: Ending) -> Body {
    let mut items: Vec<Result<Bytes, io::Error>> = frames.into_iter().map(|f| Ok(Bytes::from(f))).collect();
    if ending == Ending::Abort {
        items.push(Err(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "scripted model: stream cut",
        )));
    }
    let stream = stream::unfold((items.into_iter(), true), move |(mut items, first)| async move {
        let item = items.next()?;
        match &item {
            Err(_) => tokio::time::sleep(ABORT_FLUSH.max(delay)).await,
            Ok(_) if !first && !delay.is_zero() => tokio::time::sleep(delay).await,
            Ok(_) => {}
        }
        Some((item, (items, false)))
    });
    Body::from_stream(stream)
}

/// A response with `body`, `content-type` and the extra headers.
pub(super) fn response(
    status: StatusCode,
    content_type: &'static str,
    body: Body,
    headers: &[(&'static str, String)],
) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let map = response.headers_mut();
    map.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::try_from(value.as_str()) {
            map.append(HeaderName::from_static(name), value);
        }
    }
    response
}

/// A JSON response.
pub(super) fn json(status: StatusCode, body: &Value, headers: &[(&'static str, String)]) -> Response {
    response(status, "application/json", Body::from(body.to_string()), headers)
}

/// An SSE response.
pub(super) fn sse(
    frames: Vec<String>,
    delay: Duration,
    ending: Ending,
    headers: &[(&'static str, String)],
) -> Response {
    let mut response = response(
        StatusCode::OK,
        "text/event-stream; charset=utf-8",
        paced_body(frames, delay, ending),
        headers,
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Keeps the first `after_events` frames, never the last (terminal) one.
pub(super) fn cut(mut frames: Vec<String>, after_events: usize) -> Vec<String> {
    frames.truncate(after_events.min(frames.len().saturating_sub(1)));
    frames
}

/// A 200 JSON response whose body stops halfway.
pub(super) fn truncated_json(body: &Value, ending: Ending, headers: &[(&'static str, String)]) -> Response {
    let text = body.to_string();
    let mut half = text.len() / 2;
    while !text.is_char_boundary(half) {
        half -= 1;
    }
    response(
        StatusCode::OK,
        "application/json",
        paced_body(vec![text[..half].to_owned()], Duration::ZERO, ending),
        headers,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_pieces_rejoin_and_split_on_words() {
        let text = "Hello there, a verylongwordindeed  x";
        let pieces = text_pieces(text);
        assert_eq!(pieces.concat(), text);
        assert_eq!(pieces[..3], ["Hello", " there,", " a"]);
        assert!(pieces.iter().all(|p| p.chars().count() <= 8));
    }

    #[test]
    fn argument_pieces_rejoin_on_char_boundaries() {
        let text = r#"{"pattern":"héllo wörld"}"#;
        let pieces = argument_pieces(text);
        assert_eq!(pieces.concat(), text);
        assert!(pieces.len() > 3);
        assert!(argument_pieces("").is_empty());
    }

    #[test]
    fn ids_are_distinct_and_shaped() {
        let ids = Ids::default();
        let a = ids.base62("toolu_01", 22);
        let b = ids.base62("toolu_01", 22);
        assert_ne!(a, b);
        assert_eq!(a.len(), 30);
        assert!(ids.hex("req_", 32)[4..].chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn cut_never_keeps_the_terminal_frame() {
        let frames: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(cut(frames.clone(), 1), ["a"]);
        assert_eq!(cut(frames, 10), ["a", "b"]);
    }
}
