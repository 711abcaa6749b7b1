//! AWS's binary event stream (`application/vnd.amazon.eventstream`), ConverseStream's
//! framing, cut into events for the stream driver.
//!
//! Each frame is read by AWS's own decoder (`aws-smithy-eventstream`), which checks both of
//! its CRC32 checksums. Its prelude checksum is also checked here as soon as the prelude
//! arrives: the official decoder checks it only once the whole frame is in, and a corrupt
//! length would otherwise be waited for (up to the idle timeout or the size cap) instead of
//! failing at once. A frame of type `exception` or `error` is the service's error, never an
//! event; a body that ends inside a frame is cut.

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::Message;
use serde_json::Value;

use crate::rest::SseEvent;
use crate::rest::stream::{FrameError, Framed, Framing};

/// A frame's prelude: its total length, its headers' length, their CRC32.
const PRELUDE: usize = 12;
/// The smallest frame: a prelude and the message's CRC32.
const SMALLEST: usize = PRELUDE + 4;

/// Cuts an event stream into its messages, handing each event on as its `:event-type` and
/// its payload.
#[derive(Debug, Default)]
pub(crate) struct EventStream {
    /// Bytes of frames not yet whole, from `start` on (the frames before it are read).
    buffer: Vec<u8>,
    start: usize,
    /// The total length of the frame being read, once its prelude has been checked (0 before).
    frame: usize,
    /// The payload of the last event, when it was not valid UTF-8 (lent out repaired).
    repaired: String,
    /// An error ended the stream: nothing more is read.
    failed: bool,
}

impl EventStream {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Reads the frames whole in the buffer.
    fn frames(&mut self, on_event: &mut impl FnMut(Framed<'_>)) {
        loop {
            let held = &self.buffer[self.start..];
            if self.frame == 0 {
                let Some(prelude) = held.get(..PRELUDE) else {
                    return;
                };
                match check_prelude(prelude) {
                    Ok(length) => self.frame = length,
                    Err(what) => return self.fail(FrameError::Corrupt(what), on_event),
                }
            }
            let Some(mut frame) = held.get(..self.frame) else {
                return;
            };
            self.start += self.frame;
            self.frame = 0;
            let message = match read_message_from(&mut frame) {
                Ok(message) => message,
                Err(e) => {
                    let what = format!("a frame does not read: {e}");
                    return self.fail(FrameError::Corrupt(what), on_event);
                }
            };
            if let Err(error) = self.dispatch(&message, on_event) {
                return self.fail(error, on_event);
            }
        }
    }

    /// Hands an event on, or returns the error a frame carries.
    fn dispatch(
        &mut self,
        message: &Message,
        on_event: &mut impl FnMut(Framed<'_>),
    ) -> Result<(), FrameError> {
        let header = |name: &str| {
            message
                .headers()
                .iter()
                .find(|h| h.name().as_str() == name)
                .and_then(|h| h.value().as_string().ok())
                .map(aws_smithy_types::str_bytes::StrBytes::as_str)
        };
        let payload = message.payload();
        match header(":message-type").unwrap_or("event") {
            "event" => {
                let data = match std::str::from_utf8(payload) {
                    Ok(text) => text,
                    Err(_) => {
                        // As the SSE path does: invalid UTF-8 is replaced, and the JSON
                        // reader decides whether what is left reads.
                        self.repaired = String::from_utf8_lossy(payload).into_owned();
                        &self.repaired
                    }
                };
                on_event(Ok(SseEvent {
                    event: header(":event-type").unwrap_or(""),
                    data,
                    id: None,
                }));
                Ok(())
            }
            "exception" => {
                let error_type = header(":exception-type").unwrap_or("exception").to_owned();
                Err(FrameError::Exception {
                    error_type,
                    message: payload_message(payload),
                    body: String::from_utf8_lossy(payload).into_owned(),
                })
            }
            "error" => Err(FrameError::Exception {
                error_type: header(":error-code").unwrap_or("error").to_owned(),
                message: header(":error-message")
                    .map(str::to_owned)
                    .or_else(|| payload_message(payload)),
                body: String::from_utf8_lossy(payload).into_owned(),
            }),
            other => Err(FrameError::Corrupt(format!(
                "a frame of :message-type {other:?}, neither an event nor an exception"
            ))),
        }
    }

    fn fail(&mut self, error: FrameError, on_event: &mut impl FnMut(Framed<'_>)) {
        self.failed = true;
        self.buffer = Vec::new();
        self.start = 0;
        self.frame = 0;
        on_event(Err(error));
    }
}

impl Framing for EventStream {
    const CONTENT_TYPE: &'static str = "application/vnd.amazon.eventstream";

    fn feed(&mut self, chunk: &[u8], on_event: &mut impl FnMut(Framed<'_>)) {
        if self.failed || chunk.is_empty() {
            return;
        }
        // The frames read are dropped before more bytes come: the buffer holds at most one
        // frame not yet whole and the chunk.
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(chunk);
        self.frames(on_event);
    }

    fn finish(&mut self, on_event: &mut impl FnMut(Framed<'_>)) {
        let held = self.buffer.len() - self.start;
        if !self.failed && held > 0 {
            self.fail(FrameError::Cut(held), on_event);
        }
    }

    fn buffered(&self) -> usize {
        (self.buffer.len() - self.start).max(self.frame)
    }
}

/// A frame's length, once its prelude's checksum and lengths are found sound.
fn check_prelude(prelude: &[u8]) -> Result<usize, String> {
    let word = |at: usize| {
        let mut bytes = [0_u8; 4];
        bytes.copy_from_slice(&prelude[at..at + 4]);
        u32::from_be_bytes(bytes)
    };
    let (total, headers, crc) = (word(0), word(4), word(8));
    let computed = crc32fast::hash(&prelude[..8]);
    if computed != crc {
        return Err(format!(
            "a frame's prelude checksum does not match (sent {crc:#010x}, computed \
             {computed:#010x})"
        ));
    }
    let total = usize::try_from(total).unwrap_or(usize::MAX);
    let headers = usize::try_from(headers).unwrap_or(usize::MAX);
    if total < SMALLEST || headers > total - SMALLEST {
        return Err(format!(
            "a frame declares {total} bytes with {headers} bytes of headers, which do not fit"
        ));
    }
    Ok(total)
}

/// The `message` of an exception's JSON payload (`message` or `Message`).
fn payload_message(payload: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(payload).ok()?;
    let message = value.get("message").or_else(|| value.get("Message"))?;
    Some(match message {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

/// One frame's bytes, for tests and fault bodies: `headers` as string headers, then `payload`.
#[cfg(test)]
pub(crate) fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue};
    let headers: Vec<Header> = headers
        .iter()
        .map(|(name, value)| {
            Header::new(
                (*name).to_owned(),
                HeaderValue::String((*value).to_owned().into()),
            )
        })
        .collect();
    let mut message = Message::new(bytes::Bytes::copy_from_slice(payload));
    for header in headers {
        message = message.add_header(header);
    }
    let mut out = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut out).unwrap_or_default();
    out
}

/// The events and the error a body decodes to, read in `chunk`-byte pieces.
#[cfg(test)]
fn decode(body: &[u8], chunk: usize) -> (Vec<(String, String)>, Option<String>) {
    let mut stream = EventStream::new();
    let mut events = Vec::new();
    let mut error = None;
    let mut on_event = |event: Framed<'_>| match event {
        Ok(event) => events.push((event.event.to_owned(), event.data.to_owned())),
        Err(e) => error = Some(format!("{e:?}")),
    };
    for piece in body.chunks(chunk.max(1)) {
        stream.feed(piece, &mut on_event);
    }
    stream.finish(&mut on_event);
    (events, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, payload: &str) -> Vec<u8> {
        frame(
            &[
                (":event-type", kind),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.as_bytes(),
        )
    }

    /// AWS's event-stream test vectors (`tests/fixtures/bedrock/eventstream/`, from
    /// aws-smithy-eventstream's test data): each valid frame is one event, split anywhere;
    /// each invalid one an error and no event.
    #[test]
    fn the_aws_event_stream_test_vectors() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/bedrock/eventstream");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 11);
        for name in names {
            let body = std::fs::read(dir.join(&name)).unwrap();
            for chunk in [1, 3, body.len()] {
                let (events, error) = decode(&body, chunk);
                if name.starts_with("valid_") {
                    assert_eq!((events.len(), &error), (1, &None), "{name}");
                } else {
                    assert!(events.is_empty(), "{name}: {events:?}");
                    let error = error.unwrap_or_default();
                    assert!(
                        error.starts_with("Corrupt(") || error.starts_with("Cut("),
                        "{name}: {error}"
                    );
                }
            }
        }
        let (events, _) = decode(&std::fs::read(dir.join("valid_empty_payload")).unwrap(), 4);
        assert_eq!(events[0].1, "");
    }

    #[test]
    fn frames_are_found_in_any_split() {
        let body = [
            event("messageStart", r#"{"role":"assistant"}"#),
            event("messageStop", r#"{"stopReason":"end_turn"}"#),
        ]
        .concat();
        let whole = decode(&body, body.len());
        assert_eq!(
            whole,
            (
                vec![
                    ("messageStart".into(), r#"{"role":"assistant"}"#.into()),
                    ("messageStop".into(), r#"{"stopReason":"end_turn"}"#.into()),
                ],
                None
            )
        );
        for chunk in 1..body.len() {
            assert_eq!(decode(&body, chunk), whole, "chunks of {chunk}");
        }
    }

    #[test]
    fn a_body_cut_anywhere_inside_a_frame_is_cut_never_an_event() {
        let body = event("messageStart", r#"{"role":"assistant"}"#);
        for at in 1..body.len() {
            let (events, error) = decode(&body[..at], 7);
            assert!(events.is_empty(), "cut at {at}");
            assert_eq!(error, Some(format!("Cut({at})")));
        }
    }

    #[test]
    fn a_flipped_bit_anywhere_is_corrupt_never_an_event() {
        let body = event("contentBlockDelta", r#"{"delta":{"text":"hi"}}"#);
        for at in 0..body.len() {
            for bit in [0x01_u8, 0x80] {
                let mut bad = body.clone();
                bad[at] ^= bit;
                let (events, error) = decode(&bad, 5);
                assert!(events.is_empty(), "byte {at} bit {bit}: {events:?}");
                let error = error.unwrap_or_default();
                assert!(
                    error.starts_with("Corrupt(") || error.starts_with("Cut("),
                    "byte {at}: {error}"
                );
            }
        }
    }

    #[test]
    fn exception_and_error_frames_are_errors_with_their_type_and_message() {
        let exception = frame(
            &[
                (":exception-type", "throttlingException"),
                (":content-type", "application/json"),
                (":message-type", "exception"),
            ],
            br#"{"message":"Too many tokens, please wait before trying again."}"#,
        );
        let (events, error) = decode(&[event("messageStart", "{}"), exception].concat(), 3);
        assert_eq!(events.len(), 1);
        let error = error.unwrap();
        assert!(error.contains("throttlingException"), "{error}");
        assert!(error.contains("Too many tokens"), "{error}");

        let error_frame = frame(
            &[
                (":error-code", "InternalFailure"),
                (":error-message", "something broke"),
                (":message-type", "error"),
            ],
            b"",
        );
        let (_, error) = decode(&error_frame, 100);
        let error = error.unwrap();
        assert!(
            error.contains("InternalFailure") && error.contains("something broke"),
            "{error}"
        );
    }

    #[test]
    fn a_huge_declared_length_is_held_as_such_for_the_cap() {
        // A sound prelude declaring 4 GiB: the reader's cap sees it at once.
        let mut prelude = Vec::new();
        prelude.extend_from_slice(&u32::MAX.to_be_bytes());
        prelude.extend_from_slice(&0_u32.to_be_bytes());
        prelude.extend_from_slice(&crc32fast::hash(&prelude).to_be_bytes());
        let mut stream = EventStream::new();
        stream.feed(&prelude, &mut |_| panic!("no event"));
        assert_eq!(stream.buffered(), u32::MAX as usize);
        // Too short to be a frame at all.
        let mut tiny = Vec::new();
        tiny.extend_from_slice(&8_u32.to_be_bytes());
        tiny.extend_from_slice(&0_u32.to_be_bytes());
        tiny.extend_from_slice(&crc32fast::hash(&tiny).to_be_bytes());
        let (_, error) = decode(&tiny, 100);
        assert!(error.unwrap().contains("do not fit"));
    }
}
