//! A stdio server's stdout, read line by line before rmcp parses it, for two things rmcp's
//! reader does not do. A line over [`MAX_LINE`] fails the call it answers at once, with an
//! error naming the limit (rmcp drops such a line and the call waits out its timeout). A
//! reply whose id is a number not written as an integer (`1.0`, `1e0`) is skipped: it answers
//! no request of this client, whose ids are integers, but rmcp would read it as one.
//!
//! Only whole lines within the limit pass, so rmcp's own limit (the same) never trips. The id
//! is found by a scan of the line's top-level keys as its bytes go by, so a line over the
//! limit is never held whole, and its id may come after its result.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::model::RequestId;
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

use super::McpError;

/// The most bytes one message may take on stdio, its newline included: rmcp's limit.
pub(crate) const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// Bytes read from the server at a time (a pipe's usual capacity).
const CHUNK: usize = 64 * 1024;

/// The server's stdout with over-long lines turned into error answers and replies with
/// non-integer ids left out.
pub(crate) struct Lines<R> {
    inner: R,
    label: String,
    /// The line being read, while it is within the limit.
    line: Vec<u8>,
    /// How many bytes the line being read has had, past the limit too.
    length: usize,
    scan: Scan,
    /// Whole lines let through, from `handed` on not yet read.
    ready: Vec<u8>,
    handed: usize,
    chunk: Box<[u8]>,
}

impl<R> Lines<R> {
    pub(crate) fn new(inner: R, label: &str) -> Self {
        Self {
            inner,
            label: label.to_owned(),
            line: Vec::new(),
            length: 0,
            scan: Scan::default(),
            ready: Vec::new(),
            handed: 0,
            chunk: vec![0; CHUNK].into_boxed_slice(),
        }
    }

    /// Takes bytes read from the server.
    fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (part, rest) = match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => bytes.split_at(at + 1),
                None => (bytes, &[][..]),
            };
            self.scan.feed(part);
            self.length = self.length.saturating_add(part.len());
            if self.length <= MAX_LINE {
                self.line.extend_from_slice(part);
            } else {
                empty(&mut self.line);
            }
            if part.ends_with(b"\n") {
                self.end_line();
            }
            bytes = rest;
        }
    }

    /// A line has ended: it passes, becomes an error answer, or is skipped.
    fn end_line(&mut self) {
        let scan = std::mem::take(&mut self.scan);
        let length = std::mem::replace(&mut self.length, 0);
        if length > MAX_LINE {
            empty(&mut self.line);
            self.oversized(&scan, length);
            return;
        }
        if let Some(id) = scan.reply_id().filter(|id| is_fraction(id)) {
            tracing::warn!(
                server = %self.label,
                id = %String::from_utf8_lossy(id),
                "skipped an MCP reply whose id is not an integer: it answers no request of this client"
            );
            self.line.clear();
            return;
        }
        if self.ready.is_empty() {
            std::mem::swap(&mut self.ready, &mut self.line);
            self.handed = 0;
        } else {
            self.ready.extend_from_slice(&self.line);
            self.line.clear();
        }
    }

    /// A line over the limit: an error answer to the request it answers, when its id says
    /// which, else skipped.
    fn oversized(&mut self, scan: &Scan, length: usize) {
        let Some(id) = scan.reply_id().and_then(request_id) else {
            tracing::warn!(
                server = %self.label,
                bytes = length,
                limit = MAX_LINE,
                "skipped an MCP message over the size limit that answers no request it names"
            );
            return;
        };
        let error = McpError::protocol(format!(
            "MCP server `{}` answered with a message of {length} bytes, over the limit of \
             {MAX_LINE} bytes ({} MiB) for one message on stdio; the answer was dropped: ask the \
             server for less (a narrower query, a smaller page)",
            self.label,
            MAX_LINE >> 20
        ));
        match serde_json::to_vec(&super::adapter::refusal(&id, &error)) {
            Ok(answer) => {
                self.ready.extend_from_slice(&answer);
                self.ready.push(b'\n');
            }
            Err(e) => tracing::warn!(
                server = %self.label,
                "cannot write the error answer for an MCP message over the size limit: {e}"
            ),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Lines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.handed < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.handed);
                buf.put_slice(&this.ready[this.handed..this.handed + n]);
                this.handed += n;
                if this.handed == this.ready.len() {
                    empty(&mut this.ready);
                    this.handed = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = std::mem::take(&mut this.chunk);
            let mut read = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let filled = read.filled().len();
            let result = match polled {
                Poll::Ready(Ok(())) if filled > 0 => {
                    this.take(&chunk[..filled]);
                    None
                }
                // The end: a last line without its newline is incomplete, and dropped.
                Poll::Ready(Ok(())) => Some(Poll::Ready(Ok(()))),
                Poll::Ready(Err(e)) => Some(Poll::Ready(Err(e))),
                Poll::Pending => Some(Poll::Pending),
            };
            this.chunk = chunk;
            if let Some(result) = result {
                return result;
            }
        }
    }
}

/// Empties `buffer`, and gives back the memory of a long line.
fn empty(buffer: &mut Vec<u8>) {
    buffer.clear();
    buffer.shrink_to(CHUNK);
}

/// Whether `raw`, an id as written, is a number with a fraction or an exponent.
fn is_fraction(raw: &[u8]) -> bool {
    raw.first()
        .is_some_and(|b| *b == b'-' || b.is_ascii_digit())
        && raw.iter().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// The request an id as written names, exactly: an integer or a string.
fn request_id(raw: &[u8]) -> Option<RequestId> {
    match serde_json::from_slice::<Value>(raw).ok()? {
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        Value::String(s) => Some(RequestId::String(s.into())),
        _ => None,
    }
}

/// The longest id kept; longer ones name no request of this client.
const MAX_ID: usize = 128;

/// What a scan of one line's top-level object found so far: its `id` as written, and whether
/// it has a `method` (then it is a request or notification, not a reply).
#[derive(Default)]
struct Scan {
    top: Top,
    depth: u32,
    string: Quoted,
    next: Next,
    /// The top-level key being read (its first bytes: enough to tell `id` and `method`).
    key: Vec<u8>,
    reading: IdValue,
    id: Option<Vec<u8>>,
    method: bool,
}

#[derive(Default)]
enum Top {
    #[default]
    Start,
    /// Inside the line's object.
    Object,
    /// Not an object, or past its end: nothing more to find.
    Done,
}

#[derive(Default, Clone, Copy)]
enum Quoted {
    #[default]
    Out,
    In,
    /// Just after a backslash.
    Escape,
}

/// What comes next at the top level.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Next {
    #[default]
    Key,
    InKey,
    Value,
}

/// The `id` value, as it is read.
#[derive(Default)]
enum IdValue {
    #[default]
    NotHere,
    /// The key was `id`; its value follows the colon.
    KeyRead,
    Reading(Vec<u8>),
    /// Over [`MAX_ID`].
    TooLong,
}

impl Scan {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    /// The id of a reply (a message with an id and no method), as written.
    fn reply_id(&self) -> Option<&[u8]> {
        if self.method {
            return None;
        }
        self.id.as_deref()
    }

    /// A byte of a value: kept when it is the id's.
    fn keep(&mut self, b: u8) {
        if let IdValue::Reading(raw) = &mut self.reading {
            if raw.len() < MAX_ID {
                raw.push(b);
            } else {
                self.reading = IdValue::TooLong;
            }
        }
    }

    fn key_byte(&mut self, b: u8) {
        if self.next == Next::InKey && self.key.len() <= "method".len() {
            self.key.push(b);
        }
    }

    fn end_value(&mut self) {
        match std::mem::take(&mut self.reading) {
            IdValue::Reading(raw) => self.id = Some(raw),
            IdValue::TooLong => self.id = None,
            IdValue::NotHere | IdValue::KeyRead => {}
        }
    }

    fn byte(&mut self, b: u8) {
        match self.string {
            Quoted::Escape => {
                self.string = Quoted::In;
                self.keep(b);
                self.key_byte(b);
                return;
            }
            Quoted::In => {
                self.keep(b);
                match b {
                    b'\\' => {
                        self.string = Quoted::Escape;
                        self.key_byte(b);
                    }
                    b'"' => {
                        self.string = Quoted::Out;
                        if self.next == Next::InKey {
                            self.next = Next::Value;
                            self.method |= self.key == b"method";
                            if self.key == b"id" {
                                self.reading = IdValue::KeyRead;
                            }
                        }
                    }
                    _ => self.key_byte(b),
                }
                return;
            }
            Quoted::Out => {}
        }
        match self.top {
            Top::Start => {
                // JSON's whitespace, and a byte order mark, may come first.
                if b.is_ascii_whitespace() || matches!(b, 0xEF | 0xBB | 0xBF) {
                    return;
                }
                if b == b'{' {
                    self.top = Top::Object;
                    self.depth = 1;
                } else {
                    self.top = Top::Done;
                }
                return;
            }
            Top::Done => return,
            Top::Object => {}
        }
        if self.depth == 1 {
            match b {
                b',' => {
                    self.end_value();
                    self.next = Next::Key;
                    return;
                }
                b'}' => {
                    self.end_value();
                    self.top = Top::Done;
                    return;
                }
                b':' => {
                    self.next = Next::Value;
                    if matches!(self.reading, IdValue::KeyRead) {
                        self.reading = IdValue::Reading(Vec::new());
                    }
                    return;
                }
                b'"' if self.next == Next::Key => {
                    self.string = Quoted::In;
                    self.next = Next::InKey;
                    self.key.clear();
                    return;
                }
                // Between tokens: never part of a top-level value.
                _ if b.is_ascii_whitespace() => return,
                _ => {}
            }
        }
        self.keep(b);
        match b {
            b'"' => self.string = Quoted::In,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(line: &str) -> Scan {
        let mut scan = Scan::default();
        // Fed in pieces, as a pipe hands them over.
        for piece in line.as_bytes().chunks(3) {
            scan.feed(piece);
        }
        scan
    }

    fn reply_id(line: &str) -> Option<String> {
        scan(line)
            .reply_id()
            .map(|id| String::from_utf8_lossy(id).into_owned())
    }

    #[test]
    fn the_id_of_a_reply_is_found_as_written_wherever_it_is() {
        let id = reply_id;
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            id(r#" {"result":{"id":1,"a":[{"id":2}],"s":"\"id\":3"}, "id" : 1.0 }"#).as_deref(),
            Some("1.0")
        );
        assert_eq!(id(r#"{"id":"7","error":{}}"#).as_deref(), Some(r#""7""#));
        assert_eq!(
            id(r#"{"id":"a\"b,}","result":1}"#).as_deref(),
            Some(r#""a\"b,}""#)
        );
        assert_eq!(id(r#"{"id":-1e3}"#).as_deref(), Some("-1e3"));
        // A request or notification is no reply; neither is anything but an object.
        assert_eq!(id(r#"{"id":1,"method":"ping"}"#), None);
        assert_eq!(id(r#"{"method":"ping","id":1}"#), None);
        assert_eq!(id(r#"[{"id":1}]"#), None);
        assert_eq!(id(r#"{"result":{"id":1}}"#), None);
        assert_eq!(id(r#"{"xid":1,"idx":2}"#), None);
        // Cut off before the id ends: not read.
        assert_eq!(id(r#"{"result":{},"id":12"#), None);
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(MAX_ID));
        assert_eq!(id(&long), None);
    }

    #[test]
    fn only_integers_and_strings_name_a_request() {
        assert_eq!(request_id(b"7"), Some(RequestId::Number(7)));
        assert_eq!(request_id(b"\"7\""), Some(RequestId::String("7".into())));
        assert_eq!(request_id(b"7.0"), None);
        assert_eq!(request_id(b"null"), None);
        assert!(is_fraction(b"1.0") && is_fraction(b"1e0") && is_fraction(b"-2E1"));
        assert!(!is_fraction(b"10") && !is_fraction(b"\"1.0\"") && !is_fraction(b"-3"));
    }
}
