//! A server-sent events decoder (the WHATWG event-stream format) fed with byte chunks as they arrive.
//!
//! Written for what real servers send, not just the spec's happy path: `\n`, `\r\n` and lone `\r` line
//! endings, UTF-8 characters split across chunks, comment lines (`: keep-alive`, OpenRouter's
//! `: OPENROUTER PROCESSING`), `data:` with or without the space, multi-line data, and a final event
//! that lacks its blank line when the server closes the connection.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the server sent one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of a line not yet terminated.
    pending: Vec<u8>,
    /// A `\r` ended the previous chunk: a `\n` at the start of the next chunk belongs to it.
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
}

/// A line that is not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the event stream has a line that is not UTF-8: {0}")]
pub struct SseError(String);

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk; returns the events it completed.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.pending.extend_from_slice(&chunk[..end]);
            let line = std::mem::take(&mut self.pending);
            self.line(&line, &mut events)?;
            let crlf = chunk[end] == b'\r';
            chunk = &chunk[end + 1..];
            if crlf {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.pending.extend_from_slice(chunk);
        Ok(events)
    }

    /// The stream ended: dispatches an event left without its blank line.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        let mut events = Vec::new();
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, &mut events)?;
        }
        self.dispatch(&mut events);
        Ok(events.pop())
    }

    fn line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(events);
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|err| SseError(err.to_string()))?;
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            // `id` and `retry` drive browser reconnection; a model stream is never resumed.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if let Some(data) = self.data.take() {
            events.push(SseEvent { event, data });
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for chunk in input.chunks(piece) {
            events.extend(decoder.feed(chunk).unwrap());
        }
        events.extend(decoder.finish().unwrap());
        events
    }

    #[test]
    fn every_split_of_the_input_gives_the_same_events() {
        let input = "event: a\ndata: {\"x\":\"é\"}\n\n: comment\r\ndata:no-space\r\ndata: second line\r\n\r\nevent: b\rdata: cr\r\rdata: [DONE]".as_bytes();
        let expected = vec![
            SseEvent {
                event: Some("a".into()),
                data: "{\"x\":\"é\"}".into(),
            },
            SseEvent {
                event: None,
                data: "no-space\nsecond line".into(),
            },
            SseEvent {
                event: Some("b".into()),
                data: "cr".into(),
            },
            SseEvent {
                event: None,
                data: "[DONE]".into(),
            },
        ];
        for piece in 1..=input.len() {
            assert_eq!(decode_in_pieces(input, piece), expected, "chunks of {piece} bytes");
        }
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        assert_eq!(decode_in_pieces(b"event: ping\n\n: hi\n\n", 4), vec![]);
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut decoder = SseDecoder::new();
        assert!(decoder.feed(b"data: \xff\xfe\n\n").is_err());
    }
}
