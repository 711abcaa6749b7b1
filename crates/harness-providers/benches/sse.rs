//! SSE decoding plus accumulation over the recorded streams, per event, and the heap
//! allocations it makes: `cargo bench -p deepharness-providers --bench sse`. Bedrock's
//! streams, AWS's binary event stream, are measured the same way beside them. Figures in
//! docs/performance.md.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_precision_loss
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use harness_core::LlmEvent;
use harness_providers::SseDecoder;
use harness_providers::replay::{Format, decode_stream};

/// Counts heap allocations, to check the decoder allocates nothing per event beyond the
/// deltas it hands out.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

#[allow(unsafe_code)]
// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's layout is passed on as it came.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the pointer came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const STREAMS: &[(&str, Format)] = &[
    (
        "openai/chat_stream_text_after_tool_result_include_usage.sse",
        Format::OpenAi,
    ),
    (
        "openai/chat_stream_single_tool_call_usage.sse",
        Format::OpenAi,
    ),
    (
        "llamacpp/chat_stream_text_include_usage.sse",
        Format::OpenAi,
    ),
    (
        "anthropic/messages_stream_thinking_signature_delta.sse",
        Format::Anthropic,
    ),
    (
        "anthropic/messages_stream_server_tool_search_then_tool_use_input_json_delta.sse",
        Format::Anthropic,
    ),
    ("gemini/stream_text_final.sse", Format::Gemini),
    (
        "gemini/stream_function_call_thought_signature.sse",
        Format::Gemini,
    ),
    (
        "bedrock/converse_stream_nova_text.eventstream",
        Format::Bedrock,
    ),
    (
        "bedrock/converse_stream_claude_thinking_signature.eventstream",
        Format::Bedrock,
    ),
    (
        "bedrock/converse_stream_nova_tool_use.eventstream",
        Format::Bedrock,
    ),
];

fn fixture(path: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    std::fs::read(dir.join(path)).expect("the recorded fixtures in tests/fixtures")
}

/// The events of a body: SSE events, or event-stream frames.
fn count_events(format: Format, body: &[u8]) -> usize {
    if format == Format::Bedrock {
        return frames(body).len();
    }
    let mut decoder = SseDecoder::new();
    let mut n = 0;
    decoder.feed(body, |e| n += usize::from(!e.data.trim().is_empty()));
    decoder.finish(|e| n += usize::from(!e.data.trim().is_empty()));
    n
}

/// Allocations and deltas of one decode.
fn allocations(format: Format, body: &[u8]) -> (usize, usize) {
    let mut deltas = 0;
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    decode_stream(format, body, 1024, |e| {
        deltas += usize::from(matches!(
            e,
            LlmEvent::TextDelta(_) | LlmEvent::ThinkingDelta(_)
        ));
        black_box(e);
    })
    .unwrap();
    (ALLOCATIONS.load(Ordering::Relaxed) - before, deltas)
}

/// An event stream's frames, cut by their declared lengths.
fn frames(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    while rest.len() >= 4 {
        let length = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let (frame, after) = rest.split_at(length);
        out.push(frame);
        rest = after;
    }
    out
}

/// The body with its middle events (all but the first and the last two) sent twice: what
/// each extra event costs is the difference, free of the per-stream costs.
fn with_middle_twice(format: Format, body: &[u8]) -> (Vec<u8>, usize) {
    if format == Format::Bedrock {
        let events = frames(body);
        let middle = &events[1..events.len() - 2];
        let mut out: Vec<&[u8]> = vec![events[0]];
        out.extend_from_slice(middle);
        out.extend_from_slice(middle);
        out.extend_from_slice(&events[events.len() - 2..]);
        return (out.concat(), middle.len());
    }
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let events: Vec<&str> = text
        .split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .collect();
    let middle = &events[1..events.len().saturating_sub(2).max(1)];
    let mut out: Vec<&str> = vec![events[0]];
    out.extend_from_slice(middle);
    out.extend_from_slice(middle);
    out.extend_from_slice(&events[events.len().saturating_sub(2).max(1)..]);
    (out.join("\n\n").into_bytes(), middle.len())
}

/// The fastest of five batches of `rounds` decodes, per decode.
fn best_time(format: Format, body: &[u8], rounds: u32) -> std::time::Duration {
    (0..5)
        .map(|_| {
            let started = std::time::Instant::now();
            for _ in 0..rounds {
                decode_stream(format, black_box(body), 1024, |e| {
                    black_box(e);
                })
                .unwrap();
            }
            started.elapsed() / rounds
        })
        .min()
        .unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    for (path, format) in STREAMS {
        let body = fixture(path);
        let events = count_events(*format, &body);
        let name = path.rsplit('/').next().unwrap_or(path);

        // Allocations: the whole stream, then what each extra event adds beyond the delta
        // it hands out (the per-stream costs, such as the final response, cancel out).
        let (total, deltas) = allocations(*format, &body);
        let (longer, extra_events) = with_middle_twice(*format, &body);
        let (longer_total, longer_deltas) = allocations(*format, &longer);
        let marginal = longer_total
            .saturating_sub(total)
            .saturating_sub(longer_deltas - deltas);
        println!(
            "{name}: {events} events, {deltas} deltas, {total} allocations in all; \
             {extra_events} more events add {marginal} allocations beyond their deltas \
             ({:.2} per event)",
            marginal as f64 / extra_events.max(1) as f64
        );
        if extra_events > 0 {
            let short = best_time(*format, &body, 2000);
            let long = best_time(*format, &longer, 2000);
            println!(
                "{name}: steady state {:.0} ns per event (whole stream {:.0} ns per event)",
                long.saturating_sub(short).as_nanos() as f64 / extra_events as f64,
                short.as_nanos() as f64 / events as f64
            );
        }

        c.bench_function(&format!("decode+accumulate per event: {name}"), |b| {
            b.iter_custom(|iterations| {
                let started = std::time::Instant::now();
                for _ in 0..iterations {
                    decode_stream(*format, black_box(&body), 1024, |e| {
                        black_box(e);
                    })
                    .unwrap();
                }
                started.elapsed() / u32::try_from(events).unwrap_or(1)
            });
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
