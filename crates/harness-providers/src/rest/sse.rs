//! Server-sent events, decoded to the WHATWG rules.
//!
//! Written here rather than taken from a crate because the providers want to borrow each
//! event's data instead of receiving an owned `String` per event: the decoder keeps its
//! buffers across events and hands each one out as `&str`, so decoding allocates nothing per
//! event once the buffers have grown. It is small and has no I/O, so it is easy to test and
//! to fuzz: feed it bytes in any split and it finds the same events.
//!
//! Rules followed: lines end in CR, LF or CRLF (also split across chunks); a leading BOM is
//! dropped; `:` starts a comment; `data` lines are joined with `\n`; `event`, `id` (unless it
//! contains NUL) and `retry` (digits only) are kept; an empty line dispatches the event if it
//! has data. An event still open when the stream ends is dispatched by [`SseDecoder::finish`]
//! (the standard drops it; a server that closes without the final blank line should not
//! lose its last chunk).

/// One event, borrowed from the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The event type; `message` when the server named none.
    pub event: &'a str,
    /// The data lines joined with `\n`.
    pub data: &'a str,
    /// The last event id seen, if any.
    pub id: Option<&'a str>,
}

/// An incremental SSE decoder.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of a line not yet ended.
    pending: Vec<u8>,
    /// A CR ended the last line; an LF right after it belongs to that line end.
    after_cr: bool,
    /// Whether the start of the stream (and a possible BOM) is behind us.
    started: bool,
    data: String,
    event: String,
    last_id: Option<String>,
    retry: Option<u64>,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The reconnection time the server last asked for, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// The last event id the server sent.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// How many bytes the decoder holds for an event not yet complete: a line not yet
    /// ended and the data lines so far. A reader caps it so that a body that never ends an
    /// event cannot grow without bound.
    pub fn buffered(&self) -> usize {
        self.pending.len() + self.data.len() + self.event.len()
    }

    /// Feeds a chunk of the body; `on_event` is called for every event it completes.
    pub fn feed(&mut self, mut chunk: &[u8], mut on_event: impl FnMut(SseEvent<'_>)) {
        if chunk.is_empty() {
            // Nothing to read, and nothing to decide: a CR just before it still waits to
            // see whether an LF follows.
            return;
        }
        if !self.started {
            // Wait for three bytes to tell a BOM from data.
            let mut head = std::mem::take(&mut self.pending);
            head.extend_from_slice(chunk);
            if head.len() < 3 && b"\xEF\xBB\xBF".starts_with(&head) {
                self.pending = head;
                return;
            }
            self.started = true;
            let start = if head.starts_with(b"\xEF\xBB\xBF") {
                3
            } else {
                0
            };
            self.feed_started(&head[start..], &mut on_event);
            return;
        }
        if self.after_cr {
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
            self.after_cr = false;
        }
        self.feed_started(chunk, &mut on_event);
    }

    fn feed_started(&mut self, chunk: &[u8], on_event: &mut impl FnMut(SseEvent<'_>)) {
        let mut rest = chunk;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            if self.pending.is_empty()
                && self.data.is_empty()
                && let Some(after) = self.single_data_event(rest, end, on_event)
            {
                rest = after;
                continue;
            }
            let line_end = rest[end];
            if self.pending.is_empty() {
                self.line(&rest[..end], on_event);
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(&rest[..end]);
                self.line(&line, on_event);
                line.clear();
                self.pending = line;
            }
            rest = &rest[end + 1..];
            if line_end == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.pending.extend_from_slice(rest);
    }

    /// The common event, one `data` line and the blank line after it, both whole in `rest`
    /// (the first line ending at `end`): handed out borrowed from the chunk instead of copied
    /// into the data buffer. Returns what follows it, or `None` (nothing done) for any other
    /// shape, which the line-by-line path reads.
    fn single_data_event<'c>(
        &mut self,
        rest: &'c [u8],
        end: usize,
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Option<&'c [u8]> {
        let value = rest[..end].strip_prefix(b"data:")?;
        let value = value.strip_prefix(b" ").unwrap_or(value);
        let mut next = end + 1;
        if rest[end] == b'\r' {
            match rest.get(next) {
                Some(b'\n') => next += 1,
                Some(_) => {}
                // An LF may follow in the next chunk.
                None => return None,
            }
        }
        let blank = *rest.get(next)?;
        if blank != b'\n' && blank != b'\r' {
            return None;
        }
        // Invalid UTF-8 is replaced on the line-by-line path.
        let data = std::str::from_utf8(value).ok()?;
        on_event(SseEvent {
            event: if self.event.is_empty() {
                "message"
            } else {
                &self.event
            },
            data,
            id: self.last_id.as_deref(),
        });
        self.event.clear();
        let mut after = next + 1;
        if blank == b'\r' {
            match rest.get(after) {
                Some(b'\n') => after += 1,
                Some(_) => {}
                None => self.after_cr = true,
            }
        }
        Some(&rest[after..])
    }

    /// Ends the stream: a last line without its end is processed, and an event still open
    /// is dispatched.
    pub fn finish(&mut self, mut on_event: impl FnMut(SseEvent<'_>)) {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            let line = if self.started || !line.starts_with(b"\xEF\xBB\xBF") {
                &line[..]
            } else {
                &line[3..]
            };
            self.line(line, &mut on_event);
        }
        self.dispatch(&mut on_event);
    }

    fn line(&mut self, line: &[u8], on_event: &mut impl FnMut(SseEvent<'_>)) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                push_utf8(&mut self.data, value);
                self.data.push('\n');
            }
            b"event" => {
                self.event.clear();
                push_utf8(&mut self.event, value);
            }
            b"id" if !value.contains(&0) => {
                let mut id = String::new();
                push_utf8(&mut id, value);
                self.last_id = Some(id);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits past a u64 are ignored; the time already set stands.
                if let Some(ms) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(SseEvent<'_>)) {
        // Data lines leave at least a `\n` behind; a buffer still empty saw none.
        if self.data.is_empty() {
            self.event.clear();
            return;
        }
        if self.data.ends_with('\n') {
            self.data.pop();
        }
        on_event(SseEvent {
            event: if self.event.is_empty() {
                "message"
            } else {
                &self.event
            },
            data: &self.data,
            id: self.last_id.as_deref(),
        });
        self.data.clear();
        self.event.clear();
    }
}

fn push_utf8(target: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => target.push_str(text),
        Err(_) => target.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in(chunks: &[&[u8]]) -> Vec<(String, String, Option<String>)> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        let mut push = |e: SseEvent<'_>| {
            out.push((
                e.event.to_owned(),
                e.data.to_owned(),
                e.id.map(str::to_owned),
            ));
        };
        for chunk in chunks {
            decoder.feed(chunk, &mut push);
        }
        decoder.finish(&mut push);
        out
    }

    fn every_split(body: &[u8]) -> Vec<Vec<(String, String, Option<String>)>> {
        (0..=body.len())
            .map(|at| decode_in(&[&body[..at], &body[at..]]))
            .collect()
    }

    #[test]
    fn fields_comments_and_multi_line_data() {
        let body =
            b": priming\nid: 7\nevent: delta\ndata: one\ndata:two\nretry: 500\n\ndata: [DONE]\n\n";
        let events = decode_in(&[body]);
        assert_eq!(
            events,
            vec![
                ("delta".into(), "one\ntwo".into(), Some("7".into())),
                ("message".into(), "[DONE]".into(), Some("7".into())),
            ]
        );
        let mut decoder = SseDecoder::new();
        decoder.feed(body, |_| {});
        assert_eq!(decoder.retry(), Some(500));
        assert_eq!(decoder.last_event_id(), Some("7"));
        // A retry too large for a u64 leaves the last one in place.
        decoder.feed(b"retry: 99999999999999999999999\n\n", |_| {});
        assert_eq!(decoder.retry(), Some(500));
    }

    #[test]
    fn cr_lf_and_crlf_end_lines_even_split_across_chunks() {
        let expected = vec![
            ("message".to_owned(), "a".to_owned(), None),
            ("message".to_owned(), "b".to_owned(), None),
            ("message".to_owned(), "c".to_owned(), None),
        ];
        let body = b"data: a\r\n\r\ndata: b\r\rdata: c\n\n";
        for events in every_split(body) {
            assert_eq!(events, expected);
        }
    }

    #[test]
    fn a_bom_is_dropped_even_split() {
        let body = b"\xEF\xBB\xBFdata: x\n\n";
        for at in 0..body.len() {
            let events = decode_in(&[&body[..at], &body[at..]]);
            assert_eq!(
                events,
                vec![("message".into(), "x".into(), None)],
                "split at {at}"
            );
        }
        // One byte at a time.
        let chunks: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(
            decode_in(&chunks),
            vec![("message".into(), "x".into(), None)]
        );
    }

    #[test]
    fn empty_data_is_an_event_no_data_is_none_and_an_open_event_is_flushed_at_the_end() {
        // A priming event (an id and empty data) is dispatched; skipping it is the reader's
        // business. An event with no data line at all is not.
        assert_eq!(
            decode_in(&[b"id: 1\ndata:\n\nevent: x\n\n"]),
            vec![("message".into(), String::new(), Some("1".into()))]
        );
        assert_eq!(
            decode_in(&[b"data: tail"]),
            vec![("message".into(), "tail".into(), None)]
        );
    }

    #[test]
    fn empty_chunks_anywhere_change_nothing() {
        let body = b"\xEF\xBB\xBFdata: a\r\n\r\ndata: b\r\rdata: c\n\n";
        let whole = decode_in(&[body]);
        for at in 0..=body.len() {
            let (head, tail) = body.split_at(at);
            // An empty chunk at the split (right after a CR when the split falls there),
            // and empty chunks at both ends.
            let events = decode_in(&[b"", head, b"", b"", tail, b""]);
            assert_eq!(events, whole, "empty chunks at byte {at}");
        }
    }

    #[test]
    fn a_one_line_event_read_in_place_keeps_its_type_and_id_and_replaces_bad_utf8() {
        // Whole in one chunk, each event below is handed out borrowed from it; split at any
        // byte, it goes line by line; both give the same events.
        let body = b"event: delta\nid: 3\ndata: {\"a\":1}\n\ndata:\r\n\r\ndata: \xFFok\n\ndata: two\ndata: lines\n\n";
        let expected = vec![
            (
                "delta".to_owned(),
                "{\"a\":1}".to_owned(),
                Some("3".to_owned()),
            ),
            ("message".to_owned(), String::new(), Some("3".to_owned())),
            (
                "message".to_owned(),
                "\u{FFFD}ok".to_owned(),
                Some("3".to_owned()),
            ),
            (
                "message".to_owned(),
                "two\nlines".to_owned(),
                Some("3".to_owned()),
            ),
        ];
        assert_eq!(decode_in(&[body]), expected);
        for events in every_split(body) {
            assert_eq!(events, expected);
        }
    }

    #[test]
    fn utf8_split_across_chunks_survives() {
        let body = "data: é✓\n\n".as_bytes();
        for events in every_split(body) {
            assert_eq!(events, vec![("message".into(), "é✓".into(), None)]);
        }
    }
}
