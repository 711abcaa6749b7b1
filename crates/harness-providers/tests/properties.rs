//! Seeded property tests of what reads a vendor's bytes: the SSE decoder, each vendor's
//! stream accumulator (through `replay::decode_stream`) and each vendor's response parser, on
//! random and mutated input built from the recorded traffic in `tests/fixtures`.
//!
//! Each target runs `DEEPHARNESS_FUZZ_CASES` cases (default 2000; `cargo xtask fuzz` sets
//! 100000), case `n` with its own generator seeded `DEEPHARNESS_FUZZ_SEED + n` (the base
//! seed defaults to a constant). A failing case names its target, number and seed;
//! `DEEPHARNESS_FUZZ_SEED=<seed> DEEPHARNESS_FUZZ_CASES=1` replays exactly that case. The
//! tests run in the debug profile, so an arithmetic overflow is a failure too.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};

use fastrand::Rng;
use harness_core::{CompletionResponse, Error, LlmEvent, ProviderErrorKind};
use harness_providers::SseDecoder;
use harness_providers::replay::{Format, decode_answer, decode_stream};
use serde_json::{Map, Number, Value};

// The runner -----------------------------------------------------------------------------------

const DEFAULT_CASES: u64 = 2000;
const DEFAULT_SEED: u64 = 0x00DE_E9BA_4E55;

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name}={text:?} is not a number: {e}")),
        Err(_) => default,
    }
}

/// Runs `case` on `DEEPHARNESS_FUZZ_CASES` generators; the first failure ends the target
/// with what replays it.
fn check(target: &str, case: impl Fn(&mut Rng)) {
    let cases = env_number("DEEPHARNESS_FUZZ_CASES", DEFAULT_CASES);
    let base = env_number("DEEPHARNESS_FUZZ_SEED", DEFAULT_SEED);
    for n in 0..cases {
        let seed = base.wrapping_add(n);
        let outcome = catch_unwind(AssertUnwindSafe(|| case(&mut Rng::with_seed(seed))));
        if let Err(payload) = outcome {
            let why = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            panic!(
                "{target}: case {n} of {cases} failed (seed {seed}); replay it with \
                 DEEPHARNESS_FUZZ_SEED={seed} DEEPHARNESS_FUZZ_CASES=1: {why}"
            );
        }
    }
    println!(
        "{target}: {cases} cases passed (seeds {base}..{})",
        base.wrapping_add(cases)
    );
}

// The SSE decoder ------------------------------------------------------------------------------

/// An event as the decoder hands it out.
type Event = (String, String, Option<String>);

/// What a decoder made of a body: the events it dispatched before `finish`, all of them,
/// and its `retry()` and `last_event_id()` at the end.
#[derive(Debug, PartialEq, Eq)]
struct Decoded {
    before_finish: Vec<Event>,
    events: Vec<Event>,
    retry: Option<u64>,
    last_id: Option<String>,
}

fn decode(chunks: &[&[u8]]) -> Decoded {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    let mut push = |e: harness_providers::SseEvent<'_>| {
        events.push((
            e.event.to_owned(),
            e.data.to_owned(),
            e.id.map(str::to_owned),
        ));
    };
    for chunk in chunks {
        decoder.feed(chunk, &mut push);
    }
    let before_finish = events.clone();
    let mut push = |e: harness_providers::SseEvent<'_>| {
        events.push((
            e.event.to_owned(),
            e.data.to_owned(),
            e.id.map(str::to_owned),
        ));
    };
    decoder.finish(&mut push);
    Decoded {
        before_finish,
        events,
        retry: decoder.retry(),
        last_id: decoder.last_event_id().map(str::to_owned),
    }
}

/// The WHATWG event-stream rules, written plainly over the whole body: one leading BOM
/// dropped, lines ended by CR, LF or CR LF, `:` comments, `data` joined with LF, `event`,
/// `id` (unless it holds NUL), `retry` (ASCII digits only; a value too large for a u64 is
/// ignored), an empty line dispatching an event that has data. Text is read as UTF-8 with
/// U+FFFD for what is not. Like the decoder, the end of the body ends a last line and
/// dispatches an open event (the standard drops it).
fn reference(body: &[u8]) -> Decoded {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let mut lines: Vec<(&[u8], bool)> = Vec::new();
    let (mut start, mut at) = (0, 0);
    while at < body.len() {
        match body[at] {
            b'\n' => {
                lines.push((&body[start..at], true));
                start = at + 1;
            }
            b'\r' => {
                lines.push((&body[start..at], true));
                if body.get(at + 1) == Some(&b'\n') {
                    at += 1;
                }
                start = at + 1;
            }
            _ => {}
        }
        at += 1;
    }
    if start < body.len() {
        lines.push((&body[start..], false));
    }
    let mut state = Reference::default();
    let mut before_finish = None;
    for (line, ended) in lines {
        if !ended {
            before_finish = Some(state.events.clone());
        }
        state.line(line);
    }
    let before_finish = before_finish.unwrap_or_else(|| state.events.clone());
    state.dispatch();
    Decoded {
        before_finish,
        events: state.events,
        retry: state.retry,
        last_id: state.last_id,
    }
}

#[derive(Default)]
struct Reference {
    data: Option<String>,
    event: String,
    last_id: Option<String>,
    retry: Option<u64>,
    events: Vec<Event>,
}

impl Reference {
    fn line(&mut self, line: &[u8]) {
        if line.is_empty() {
            self.dispatch();
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match &*String::from_utf8_lossy(field) {
            "data" => {
                let text = self.data.get_or_insert_with(String::new);
                text.push_str(&value);
                text.push('\n');
            }
            "event" => self.event = value.into_owned(),
            "id" if !value.contains('\0') => self.last_id = Some(value.into_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        if let Some(mut text) = self.data.take() {
            text.pop();
            let kind = if self.event.is_empty() {
                "message"
            } else {
                &self.event
            };
            self.events
                .push((kind.to_owned(), text, self.last_id.clone()));
        }
        self.event.clear();
    }
}

/// A body of SSE-ish pieces: field names, values, comments, spaces, line ends of every
/// kind, BOMs, NUL, digits past a u64, and bytes that are not UTF-8.
fn sse_body(rng: &mut Rng) -> Vec<u8> {
    const NAMES: &[&[u8]] = &[
        b"data", b"data:", b"data: ", b"data:  ", b"event:", b"event: ", b"id:", b"id: ",
        b"retry:", b"retry: ", b":", b": ping", b"dat", b"Data:", b"events:", b" data:",
    ];
    const VALUES: &[&[u8]] = &[
        b"x",
        b"hello",
        b"[DONE]",
        b"{\"a\": 1}",
        b" ",
        b"  ",
        b"\0",
        b"\xEF\xBB\xBF",
        b"\xFF",
        b"\xC3",
        b"\xE2\x82",
        b"\x80",
        "é✓".as_bytes(),
        b":",
        b"0",
        b"1500",
        b"99999999999999999999999",
        b"18446744073709551615",
        b"18446744073709551616",
    ];
    const ENDS: &[&[u8]] = &[
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b"\r\r",
        b"\r\n\r\n",
        b"\n\r",
    ];
    let mut body = Vec::new();
    match rng.u8(..8) {
        0 => body.extend_from_slice(b"\xEF\xBB\xBF"),
        1 => body.extend_from_slice(&b"\xEF\xBB\xBF"[..rng.usize(1..3)]),
        _ => {}
    }
    for _ in 0..rng.usize(0..40) {
        match rng.u8(..10) {
            0..=3 => body.extend_from_slice(rng.choice(NAMES).unwrap()),
            4..=6 => body.extend_from_slice(rng.choice(VALUES).unwrap()),
            7 => {
                let digits = rng.usize(1..25);
                body.extend((0..digits).map(|_| rng.u8(b'0'..=b'9')));
            }
            8 => body.extend(bytes(rng, 1..6)),
            _ => {}
        }
        if rng.bool() {
            body.extend_from_slice(rng.choice(ENDS).unwrap());
        }
    }
    body
}

/// Random bytes, as many as `len` says.
fn bytes(rng: &mut Rng, len: std::ops::Range<usize>) -> Vec<u8> {
    let len = rng.usize(len);
    (0..len).map(|_| rng.u8(..)).collect()
}

/// `body` in random pieces, with empty chunks anywhere (at the ends, and often right after
/// a CR, where the decoder waits to see whether an LF follows).
fn chunks<'b>(rng: &mut Rng, body: &'b [u8]) -> Vec<&'b [u8]> {
    let mut cuts: Vec<usize> = if rng.u8(..10) == 0 {
        (0..=body.len()).collect()
    } else {
        let mut cuts: Vec<usize> = (0..rng.usize(0..=body.len().min(24)))
            .map(|_| rng.usize(0..=body.len()))
            .collect();
        cuts.extend([0, body.len()]);
        cuts
    };
    cuts.sort_unstable();
    let mut pieces = Vec::new();
    for pair in cuts.windows(2) {
        let piece = &body[pair[0]..pair[1]];
        // A repeated cut is already an empty chunk; add more.
        if rng.u8(..6) == 0 || (piece.last() == Some(&b'\r') && rng.bool()) {
            pieces.push(piece);
            pieces.push(&[][..]);
        } else {
            pieces.push(piece);
        }
    }
    if rng.bool() {
        pieces.insert(0, &[][..]);
    }
    pieces
}

#[test]
fn sse_decoder_any_chunking_gives_the_events_of_the_whole_body() {
    check("sse: chunking", |rng| {
        let body = sse_body(rng);
        let pieces = chunks(rng, &body);
        let whole = decode(&[&body]);
        assert_eq!(decode(&pieces), whole, "in chunks {pieces:?}");
        assert_eq!(whole, reference(&body), "the WHATWG reading of {body:?}");
    });
}

#[test]
fn sse_decoder_never_panics_on_random_bytes() {
    check("sse: random bytes", |rng| {
        let body: Vec<u8> = bytes(rng, 0..2048);
        let pieces = chunks(rng, &body);
        let whole = decode(&[&body]);
        assert_eq!(decode(&pieces), whole, "in chunks {pieces:?}");
        assert_eq!(whole, reference(&body), "the WHATWG reading of {body:?}");
    });
}

// The stream accumulators ----------------------------------------------------------------------

struct Recording {
    name: String,
    body: Vec<u8>,
    whole: CompletionResponse,
    text: String,
    thinking: String,
}

/// The recorded streams of `dirs`, each with what it decodes to whole.
fn recordings(format: Format, dirs: &[&str]) -> Vec<Recording> {
    let mut all = Vec::new();
    for dir in dirs {
        // `dir/prefix`: the files of `dir` whose names start with `prefix`; `dir/` (Azure's
        // `azure/chat/`) all the files of a directory within a directory.
        let (dir, prefix) = dir.rsplit_once('/').unwrap_or((dir, ""));
        let mut paths: Vec<_> = std::fs::read_dir(support::fixtures_dir().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e == "sse" || e == "eventstream")
            })
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .collect();
        paths.sort();
        for path in paths {
            let body = std::fs::read(&path).unwrap();
            let (whole, text, thinking) = decoded(format, &body, body.len());
            all.push(Recording {
                name: format!("{dir}/{}", path.file_name().unwrap().to_string_lossy()),
                body,
                whole: whole.unwrap(),
                text,
                thinking,
            });
        }
    }
    assert!(!all.is_empty());
    all
}

/// A body decoded in `chunk`-byte pieces: the turn or error, the text deltas and the
/// thinking deltas handed out.
fn decoded(
    format: Format,
    body: &[u8],
    chunk: usize,
) -> (Result<CompletionResponse, Error>, String, String) {
    let (mut text, mut thinking) = (String::new(), String::new());
    let result = decode_stream(format, body, chunk, |event| match event {
        LlmEvent::TextDelta(t) => text.push_str(&t),
        LlmEvent::ThinkingDelta(t) => thinking.push_str(&t),
        LlmEvent::HostedCall(_) => {}
        other => panic!("not a delta: {other:?}"),
    });
    (result, text, thinking)
}

/// What every turn must be, whatever bytes made it: calls with either arguments or the raw
/// text, never both; usage that adds up without overflow.
fn sound(response: &CompletionResponse) {
    for call in response.tool_calls() {
        assert!(
            call.raw_arguments.is_none() || call.arguments.is_empty(),
            "{call:?}"
        );
    }
    if let Some(usage) = response.usage() {
        let _ = *usage + *usage;
    }
}

/// An error must be a provider error of a kind a reader of a body gives.
fn typed(err: &Error) {
    let provider = err
        .provider()
        .unwrap_or_else(|| panic!("not a provider error: {err:?}"));
    assert!(
        matches!(
            provider.kind(),
            ProviderErrorKind::Malformed
                | ProviderErrorKind::Incomplete
                | ProviderErrorKind::Vendor
        ),
        "{provider:?}"
    );
}

/// Token counts as a vendor should never send them.
const ODD_COUNTS: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "184467440737095516150000",
    "1e30",
    "-1e30",
    "-1",
    "-9223372036854775809",
    "2.5",
    "0.0001",
    "1e308",
    "1e400",
    "null",
    "\"12\"",
    "{}",
    "[]",
    "true",
];

/// The recording, mutated one to four times: cut, a range deleted or duplicated, bytes
/// flipped, garbage inserted, a token count replaced by an odd one.
fn mutate(rng: &mut Rng, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    for _ in 0..rng.usize(1..=4) {
        let len = body.len();
        let (a, b) = {
            let (x, y) = (rng.usize(0..=len), rng.usize(0..=len));
            (x.min(y), x.max(y))
        };
        match rng.u8(..6) {
            0 => body.truncate(a),
            1 => {
                body.drain(a..b);
            }
            2 => {
                let copy = body[a..b].to_vec();
                let at = rng.usize(0..=len);
                body.splice(at..at, copy);
            }
            3 if len > 0 => {
                for _ in 0..rng.usize(1..8) {
                    let at = rng.usize(0..len);
                    body[at] ^= rng.u8(1..);
                }
            }
            4 => {
                let garbage: Vec<u8> = bytes(rng, 1..32);
                body.splice(a..a, garbage);
            }
            _ => odd_count(rng, &mut body, false),
        }
    }
    body
}

/// Replaces the value of a random token-count field (`"..._tokens":`, `"...TokenCount":`)
/// by an odd one (`readable`: one that is still JSON serde_json can hold, so not `1e400`).
fn odd_count(rng: &mut Rng, body: &mut Vec<u8>, readable: bool) {
    let fields: Vec<usize> = [&b"tokens\":"[..], b"TokenCount\":"]
        .iter()
        .flat_map(|key| {
            body.windows(key.len())
                .enumerate()
                .filter(move |(_, w)| w == key)
                .map(move |(at, _)| at + key.len())
        })
        .collect();
    let Some(&start) = rng.choice(&fields) else {
        return;
    };
    // The value ends at a comma or line end outside brackets, or at the bracket that
    // closes its object (an odd value put here before may be `{}` or `[]`).
    let mut depth = 0_usize;
    let end = body[start..]
        .iter()
        .position(|&b| match b {
            b'{' | b'[' => {
                depth += 1;
                false
            }
            b'}' | b']' if depth > 0 => {
                depth -= 1;
                false
            }
            b'}' | b']' | b'\n' | b'\r' => true,
            b',' => depth == 0,
            _ => false,
        })
        .map_or(body.len(), |n| start + n);
    let odd = loop {
        let odd = rng.choice(ODD_COUNTS).unwrap();
        if !readable || serde_json::from_str::<Value>(odd).is_ok() {
            break odd;
        }
    };
    body.splice(start..end, odd.bytes());
}

fn stream_mutations(target: &str, format: Format, dirs: &[&str]) {
    let recordings = recordings(format, dirs);
    check(target, |rng| {
        let recording = rng.choice(&recordings).unwrap();
        let body = mutate(rng, &recording.body);
        let chunk = rng.usize(1..=body.len() + 1);
        match decoded(format, &body, chunk).0 {
            Ok(response) => sound(&response),
            Err(err) => typed(&err),
        }
    });
}

/// A recording cut at any byte, read in any chunking: an error, or exactly the whole
/// recording's turn (a cut after the end mark); the deltas handed out a prefix of the
/// whole's either way.
fn stream_cuts(target: &str, format: Format, dirs: &[&str]) {
    let recordings = recordings(format, dirs);
    check(target, |rng| {
        let recording = rng.choice(&recordings).unwrap();
        let cut = rng.usize(0..=recording.body.len());
        let chunk = rng.usize(1..=cut + 1);
        let (result, text, thinking) = decoded(format, &recording.body[..cut], chunk);
        let name = &recording.name;
        assert!(
            recording.text.starts_with(&text),
            "{name} cut at {cut}: {text:?}"
        );
        assert!(
            recording.thinking.starts_with(&thinking),
            "{name} cut at {cut}"
        );
        match result {
            Ok(response) => {
                assert_eq!(
                    response.content(),
                    recording.whole.content(),
                    "{name} cut at {cut}: a shorter answer passed off as whole"
                );
                assert_eq!(
                    response.tool_calls(),
                    recording.whole.tool_calls(),
                    "{name} cut at {cut}"
                );
                assert_eq!(response.finish_reason(), recording.whole.finish_reason());
            }
            Err(err) => typed(&err),
        }
    });
}

/// Odd token counts (huge, negative, fractional, not numbers) in a recording: the turn is
/// the whole recording's all the same. A vendor's odd usage must not cost its answer.
fn stream_odd_counts(target: &str, format: Format, dirs: &[&str]) {
    let recordings = recordings(format, dirs);
    check(target, |rng| {
        let recording = rng.choice(&recordings).unwrap();
        let mut body = recording.body.clone();
        for _ in 0..rng.usize(1..=3) {
            odd_count(rng, &mut body, true);
        }
        let chunk = rng.usize(1..=body.len());
        let (result, text, _) = decoded(format, &body, chunk);
        let response = result.unwrap_or_else(|e| panic!("{}: {e}", recording.name));
        sound(&response);
        assert_eq!(text, recording.text);
        assert_eq!(response.content(), recording.whole.content());
        assert_eq!(response.tool_calls(), recording.whole.tool_calls());
        assert_eq!(response.finish_reason(), recording.whole.finish_reason());
    });
}

#[test]
fn odd_token_counts_in_a_stream_keep_the_answer() {
    stream_odd_counts(
        "openai stream: odd counts",
        Format::OpenAi,
        &["openai", "llamacpp", "azure/chat/"],
    );
    stream_odd_counts(
        "anthropic stream: odd counts",
        Format::Anthropic,
        &["anthropic", "vertex/anthropic_"],
    );
    stream_odd_counts(
        "gemini stream: odd counts",
        Format::Gemini,
        &["gemini", "vertex/gemini_"],
    );
    stream_odd_counts("cohere stream: odd counts", Format::Cohere, &["cohere"]);
    stream_odd_counts(
        "openai-responses stream: odd counts",
        Format::OpenAiResponses,
        &["openai-responses", "azure/responses/"],
    );
}

#[test]
fn openai_stream_mutations_never_panic() {
    stream_mutations(
        "openai stream: mutations",
        Format::OpenAi,
        &["openai", "llamacpp", "azure/chat/"],
    );
}

#[test]
fn anthropic_stream_mutations_never_panic() {
    stream_mutations(
        "anthropic stream: mutations",
        Format::Anthropic,
        &["anthropic", "vertex/anthropic_"],
    );
}

#[test]
fn responses_stream_mutations_never_panic() {
    stream_mutations(
        "openai-responses stream: mutations",
        Format::OpenAiResponses,
        &["openai-responses", "azure/responses/"],
    );
}

#[test]
fn responses_stream_cut_anywhere_is_an_error_or_the_whole_turn() {
    stream_cuts(
        "openai-responses stream: cuts",
        Format::OpenAiResponses,
        &["openai-responses", "azure/responses/"],
    );
}

#[test]
fn gemini_stream_mutations_never_panic() {
    stream_mutations(
        "gemini stream: mutations",
        Format::Gemini,
        &["gemini", "vertex/gemini_"],
    );
}

#[test]
fn cohere_stream_mutations_never_panic() {
    stream_mutations("cohere stream: mutations", Format::Cohere, &["cohere"]);
}

#[test]
fn openai_stream_cut_anywhere_is_an_error_or_the_whole_turn() {
    stream_cuts(
        "openai stream: cuts",
        Format::OpenAi,
        &["openai", "llamacpp", "azure/chat/"],
    );
}

#[test]
fn anthropic_stream_cut_anywhere_is_an_error_or_the_whole_turn() {
    stream_cuts(
        "anthropic stream: cuts",
        Format::Anthropic,
        &["anthropic", "vertex/anthropic_"],
    );
}

#[test]
fn bedrock_stream_mutations_never_panic() {
    // Mutated frames: a checksum catches nearly every change, the rest reach the parser.
    stream_mutations("bedrock stream: mutations", Format::Bedrock, &["bedrock"]);
}

#[test]
fn bedrock_stream_cut_anywhere_is_an_error_or_the_whole_turn() {
    stream_cuts("bedrock stream: cuts", Format::Bedrock, &["bedrock"]);
}

#[test]
fn gemini_stream_cut_anywhere_is_an_error_or_the_whole_turn() {
    stream_cuts(
        "gemini stream: cuts",
        Format::Gemini,
        &["gemini", "vertex/gemini_"],
    );
}

#[test]
fn cohere_stream_cut_anywhere_is_an_error_or_the_whole_turn() {
    stream_cuts("cohere stream: cuts", Format::Cohere, &["cohere"]);
}

// The response parsers -------------------------------------------------------------------------

/// The non-streamed answers of `dirs` (requests left out).
fn answers(dirs: &[&str]) -> Vec<Value> {
    let mut all = Vec::new();
    for dir in dirs {
        let (dir, prefix) = dir.rsplit_once('/').unwrap_or((dir, ""));
        let mut paths: Vec<_> = std::fs::read_dir(support::fixtures_dir().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with(prefix)
                    && name.ends_with(".json")
                    && !name.ends_with(".request.json")
            })
            .collect();
        paths.sort();
        all.extend(
            paths
                .iter()
                .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()),
        );
    }
    assert!(!all.is_empty());
    all
}

/// A random number, odd ones often.
fn number(rng: &mut Rng) -> Value {
    match rng.u8(..8) {
        0 => Value::from(u64::MAX),
        1 => Value::from(i64::MIN),
        2 => Value::from(rng.u64(..)),
        3 => Value::from(rng.i64(..)),
        4 => Number::from_f64(rng.f64() * 1e30 - 5e29).map_or(Value::Null, Value::Number),
        5 => Value::from(-1),
        6 => Value::from(2.5),
        _ => serde_json::from_str(rng.choice(["1e308", "18446744073709551616", "0"]).unwrap())
            .unwrap(),
    }
}

/// Random JSON, not of `not`'s type where that can be helped.
fn random_json(rng: &mut Rng, depth: usize, not: Option<&Value>) -> Value {
    loop {
        let value = match rng.u8(..if depth > 2 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::Bool(rng.bool()),
            2 => number(rng),
            3 => Value::from(
                [
                    "", "x", "stop", "tool_use", "STOP", "{\"a\":", "text", "function",
                ][rng.usize(..8)],
            ),
            4 => Value::Array(
                (0..rng.usize(0..3))
                    .map(|_| random_json(rng, depth + 1, None))
                    .collect(),
            ),
            _ => {
                let keys = ["type", "text", "content", "name", "args", "id", "message"];
                Value::Object(
                    (0..rng.usize(0..3))
                        .map(|_| {
                            let key = keys[rng.usize(..keys.len())].to_owned();
                            (key, random_json(rng, depth + 1, None))
                        })
                        .collect::<Map<_, _>>(),
                )
            }
        };
        let same =
            not.is_some_and(|old| std::mem::discriminant(old) == std::mem::discriminant(&value));
        if !same {
            return value;
        }
    }
}

/// JSON pointers to every value in `value`, the root included.
fn pointers(value: &Value, at: &str, out: &mut Vec<String>) {
    out.push(at.to_owned());
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let key = key.replace('~', "~0").replace('/', "~1");
                pointers(child, &format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                pointers(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The answer, mutated one to five times: a value replaced by JSON of another type, a key
/// deleted, a token count made huge, negative or fractional.
fn mutate_answer(rng: &mut Rng, answer: &Value) -> Value {
    let mut answer = answer.clone();
    for _ in 0..rng.usize(1..=5) {
        let mut all = Vec::new();
        pointers(&answer, "", &mut all);
        let at = rng.choice(&all).unwrap().clone();
        match rng.u8(..3) {
            0 => {
                let target = answer.pointer_mut(&at).unwrap();
                *target = random_json(rng, 0, Some(target));
            }
            1 => {
                let (parent, key) = at.rsplit_once('/').unwrap_or(("", ""));
                if let Some(Value::Object(map)) = answer.pointer_mut(parent) {
                    map.remove(&key.replace("~1", "/").replace("~0", "~"));
                }
            }
            _ => {
                let counts: Vec<&String> = all
                    .iter()
                    .filter(|p| p.to_ascii_lowercase().contains("token"))
                    .collect();
                if let Some(&count) = rng.choice(&counts) {
                    let odd = rng.choice(ODD_COUNTS).unwrap();
                    let odd = serde_json::from_str(odd).unwrap_or_else(|_| number(rng));
                    *answer.pointer_mut(count).unwrap() = odd;
                }
            }
        }
    }
    answer
}

fn parser_mutations(target: &str, format: Format, dirs: &[&str]) {
    let answers = answers(dirs);
    for answer in &answers {
        sound(&decode_answer(format, answer).unwrap());
    }
    check(target, |rng| {
        let original = rng.choice(&answers).unwrap();
        let answer = mutate_answer(rng, original);
        match decode_answer(format, &answer) {
            Ok(response) => sound(&response),
            Err(err) => {
                let provider = err
                    .provider()
                    .unwrap_or_else(|| panic!("not a provider error: {err:?}"));
                // A Responses answer carries its own `error` and `status`: a mutation can
                // make it a failed response, which is the vendor's error.
                let vendor = format == Format::OpenAiResponses
                    && provider.kind() == ProviderErrorKind::Vendor;
                assert!(
                    provider.kind() == ProviderErrorKind::Malformed || vendor,
                    "{provider:?}"
                );
            }
        }
    });
}

/// Odd token counts in a recorded answer: the answer is the same all the same.
fn parser_odd_counts(target: &str, format: Format, dirs: &[&str]) {
    let answers = answers(dirs);
    check(target, |rng| {
        let original = rng.choice(&answers).unwrap();
        let whole = decode_answer(format, original).unwrap();
        let mut answer = original.clone();
        let mut all = Vec::new();
        pointers(&answer, "", &mut all);
        all.retain(|p| {
            let key = p
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            key.ends_with("tokens") || key.ends_with("tokencount")
        });
        for _ in 0..rng.usize(1..=3) {
            let Some(at) = rng.choice(&all) else { break };
            let odd = serde_json::from_str(rng.choice(ODD_COUNTS).unwrap())
                .unwrap_or_else(|_| number(rng));
            // A count inside one replaced before (Cohere's `tokens` object) is gone.
            if let Some(count) = answer.pointer_mut(at) {
                *count = odd;
            }
        }
        let response = decode_answer(format, &answer).unwrap_or_else(|e| panic!("{answer}: {e}"));
        sound(&response);
        assert_eq!(response.content(), whole.content());
        assert_eq!(response.tool_calls(), whole.tool_calls());
        assert_eq!(response.finish_reason(), whole.finish_reason());
    });
}

#[test]
fn odd_token_counts_in_an_answer_keep_the_answer() {
    parser_odd_counts(
        "openai parser: odd counts",
        Format::OpenAi,
        &["openai", "llamacpp", "azure/chat/"],
    );
    parser_odd_counts(
        "anthropic parser: odd counts",
        Format::Anthropic,
        &["anthropic", "vertex/anthropic_"],
    );
    parser_odd_counts(
        "gemini parser: odd counts",
        Format::Gemini,
        &["gemini", "vertex/gemini_"],
    );
    parser_odd_counts("bedrock parser: odd counts", Format::Bedrock, &["bedrock"]);
    parser_odd_counts("cohere parser: odd counts", Format::Cohere, &["cohere"]);
    parser_odd_counts(
        "openai-responses parser: odd counts",
        Format::OpenAiResponses,
        &["openai-responses", "azure/responses/"],
    );
}

#[test]
fn openai_parser_mutations_never_panic() {
    parser_mutations(
        "openai parser: mutations",
        Format::OpenAi,
        &["openai", "llamacpp", "azure/chat/"],
    );
}

#[test]
fn anthropic_parser_mutations_never_panic() {
    parser_mutations(
        "anthropic parser: mutations",
        Format::Anthropic,
        &["anthropic", "vertex/anthropic_"],
    );
}

#[test]
fn bedrock_parser_mutations_never_panic() {
    parser_mutations("bedrock parser: mutations", Format::Bedrock, &["bedrock"]);
}

#[test]
fn responses_parser_mutations_never_panic() {
    parser_mutations(
        "openai-responses parser: mutations",
        Format::OpenAiResponses,
        &["openai-responses", "azure/responses/"],
    );
}

#[test]
fn gemini_parser_mutations_never_panic() {
    parser_mutations(
        "gemini parser: mutations",
        Format::Gemini,
        &["gemini", "vertex/gemini_"],
    );
}

#[test]
fn cohere_parser_mutations_never_panic() {
    parser_mutations("cohere parser: mutations", Format::Cohere, &["cohere"]);
}
