//! Captured command output, shared by the sandbox backends: each stream kept as its head and tail
//! with the full byte count, decoded as lossy UTF-8 with NULs replaced.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};

const READ_CHUNK: usize = 64 * 1024;

/// One output stream, kept as its first and last bytes, with the full count.
pub(crate) struct Capture {
    head: Vec<u8>,
    head_limit: usize,
    tail: VecDeque<u8>,
    tail_limit: usize,
    /// Every byte pushed, kept or not.
    pub(crate) total: u64,
}

impl Capture {
    pub(crate) fn new(head_limit: usize, tail_limit: usize) -> Self {
        Capture {
            head: Vec::new(),
            head_limit,
            tail: VecDeque::new(),
            tail_limit,
            total: 0,
        }
    }

    /// A capture keeping `limit` bytes: the head and the tail, half each.
    pub(crate) fn with_limit(limit: usize) -> Self {
        let half = limit / 2;
        Capture::new(half, limit - half)
    }

    /// Reads to the end of the pipe (or the first error: what was read stays).
    pub(crate) async fn read_from(&mut self, pipe: Option<impl AsyncRead + Unpin>) {
        let Some(mut pipe) = pipe else { return };
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => self.push(&buf[..n]),
            }
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_limit - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_limit {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_limit..]);
        } else {
            self.tail.extend(bytes);
            let excess = self.tail.len().saturating_sub(self.tail_limit);
            self.tail.drain(..excess);
        }
    }

    pub(crate) fn truncated(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// Lossy UTF-8 with NULs replaced; when truncated, head and tail around a marker counting the
    /// omitted bytes.
    pub(crate) fn into_text(self) -> String {
        let truncated = self.truncated();
        let Capture {
            mut head, tail, total, ..
        } = self;
        let mut tail = Vec::from(tail);
        if !truncated {
            head.extend_from_slice(&tail);
            return decode(&head);
        }
        // Cut at character boundaries rather than leave broken characters at the marker.
        head.truncate(utf8_prefix_len(&head));
        let skip = tail.iter().take(3).take_while(|b| (**b & 0xC0) == 0x80).count();
        tail.drain(..skip);
        let omitted = total - (head.len() + tail.len()) as u64;
        let mut text = decode(&head);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[… {} bytes omitted …]\n", group_digits(omitted)));
        text.push_str(&decode(&tail));
        text
    }
}

/// The length of `bytes` without a trailing incomplete UTF-8 sequence.
fn utf8_prefix_len(bytes: &[u8]) -> usize {
    // Look back at most 3 bytes for the lead byte of the last sequence.
    for back in 1..=bytes.len().min(4) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let width = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if width > back { bytes.len() - back } else { bytes.len() };
    }
    bytes.len()
}

pub(crate) fn decode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace('\0', "\u{FFFD}")
}

/// `1234567` → `1,234,567`.
pub(crate) fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_count_everything_and_keep_the_ends() {
        let mut capture = Capture::new(4, 4);
        for chunk in [&b"abc"[..], b"defgh", b"ij", b"klmnopq"] {
            capture.push(chunk);
        }
        assert_eq!(capture.total, 17);
        assert_eq!(capture.into_text(), "abcd\n[… 9 bytes omitted …]\nnopq");
        let mut small = Capture::new(4, 4);
        small.push(b"12345678");
        assert!(!small.truncated());
        assert_eq!(small.into_text(), "12345678");
        // A character cut by the head or the tail is left out whole.
        let mut split = Capture::new(2, 2);
        split.push("aé-xyz-éb".as_bytes());
        assert_eq!(split.into_text(), "a\n[… 9 bytes omitted …]\nb");
    }

    #[test]
    fn digits_are_grouped() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(123_456_789), "123,456,789");
    }
}
