//! One output stream of a command, read as it arrives into a bounded head and tail.
//!
//! The bytes are decoded as they come, the way [`String::from_utf8_lossy`] would decode them
//! all at once: each maximal invalid sequence becomes one U+FFFD, and a character split
//! between two reads is joined first (at most 3 bytes wait for the rest of it). The first
//! `max_chars` characters are kept whole. Past them only counts are kept, and the end of the
//! text: the characters after the last non-whitespace one are pending (they vanish if the
//! stream ends with them, as the right-trim does), the ones before it are committed. Only the
//! last [`tail_chars`] of each are kept, so whatever the command prints, a stream holds at
//! most `4 × max_chars` bytes of head and two buffers of less than `3 × (4 × tail_chars + 3)`
//! bytes each: under 300 KB at the default 30 000 characters.

use std::fmt::Write as _;

/// How many of a cut stream's `max_chars` characters come from its end.
pub(super) fn tail_chars(max_chars: usize) -> usize {
    max_chars / 5
}

/// A stream read so far. [`Capture::render`] gives its text as the tool shows it.
#[derive(Debug)]
pub(super) struct Capture {
    max_chars: usize,
    tail_chars: usize,
    /// The start of a character split between two reads (at most 3 bytes).
    carry: Vec<u8>,
    /// The first `max_chars` characters.
    head: String,
    head_chars: usize,
    /// How many characters past the head end with a non-whitespace one.
    committed: u64,
    /// The end of those committed characters: at least their last `tail_chars`.
    tail: String,
    /// How many whitespace characters followed the last non-whitespace one past the head.
    pending: u64,
    /// The end of those pending characters: at least their last `tail_chars`.
    pending_text: String,
}

impl Capture {
    pub(super) fn new(max_chars: usize) -> Self {
        Self {
            max_chars,
            tail_chars: tail_chars(max_chars),
            carry: Vec::new(),
            head: String::new(),
            head_chars: 0,
            committed: 0,
            tail: String::new(),
            pending: 0,
            pending_text: String::new(),
        }
    }

    /// Takes the next bytes the stream produced.
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        let joined;
        let mut rest = if self.carry.is_empty() {
            bytes
        } else {
            self.carry.extend_from_slice(bytes);
            joined = std::mem::take(&mut self.carry);
            joined.as_slice()
        };
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.push(text);
                    return;
                }
                Err(error) => {
                    let (valid, invalid) = rest.split_at(error.valid_up_to());
                    self.push(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(len) => {
                            self.push("\u{FFFD}");
                            rest = invalid.get(len..).unwrap_or_default();
                        }
                        None => {
                            // The stream may complete this character on the next read.
                            self.carry = invalid.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    fn push(&mut self, mut text: &str) {
        if text.is_empty() {
            return;
        }
        if self.head_chars < self.max_chars {
            let room = self.max_chars - self.head_chars;
            let (end, taken) = match text.char_indices().nth(room) {
                Some((end, _)) => (end, room),
                None => (text.len(), text.chars().count()),
            };
            self.head.push_str(&text[..end]);
            self.head_chars += taken;
            text = &text[end..];
            if text.is_empty() {
                return;
            }
        }
        let keep = 4 * self.tail_chars + 3;
        match text.rfind(|c: char| !c.is_whitespace()) {
            None => {
                self.pending += count(text);
                keep_end(&mut self.pending_text, text, keep);
            }
            Some(last) => {
                let end = last + text[last..].chars().next().map_or(1, char::len_utf8);
                let (body, spaces) = text.split_at(end);
                self.committed += self.pending + count(body);
                keep_end(&mut self.tail, &self.pending_text, keep);
                keep_end(&mut self.tail, body, keep);
                self.pending = count(spaces);
                self.pending_text.clear();
                keep_end(&mut self.pending_text, spaces, keep);
            }
        }
    }

    /// The stream's text right-trimmed, `None` if it is blank. Longer than `max_chars`
    /// characters, it keeps its first `max_chars - tail_chars` and its last `tail_chars`,
    /// with the line `... [N characters cut] ...` between them (N counts the characters left
    /// out). The marker has a line of its own; where the cut falls at a line break, the
    /// output's own break is used instead of adding one.
    pub(super) fn render(mut self) -> Option<String> {
        if !self.carry.is_empty() {
            // The stream ended inside a character.
            self.carry.clear();
            self.push("\u{FFFD}");
        }
        if self.committed == 0 {
            let text = self.head.trim_end();
            return (!text.is_empty()).then(|| text.to_owned());
        }
        let shown_head = self.max_chars - self.tail_chars;
        let head_end = self
            .head
            .char_indices()
            .nth(shown_head)
            .map_or(self.head.len(), |(i, _)| i);
        let head = &self.head[..head_end];
        // The last `tail_chars` characters: from the committed tail, and from the end of the
        // head when fewer than that were committed past it.
        let from_tail: Vec<char> = self.tail.chars().rev().take(self.tail_chars).collect();
        let from_head = self.tail_chars - from_tail.len();
        let mut tail: String = self.head.chars().rev().take(from_head).collect();
        tail = tail.chars().rev().collect();
        tail.extend(from_tail.iter().rev());
        let cut = self.committed;
        let mut text = String::with_capacity(head.len() + tail.len() + 40);
        text.push_str(head);
        if !head.is_empty() && !head.ends_with('\n') {
            text.push('\n');
        }
        let plural = if cut == 1 { "" } else { "s" };
        let _ = write!(text, "... [{cut} character{plural} cut] ...");
        if !tail.is_empty() && !tail.starts_with('\n') {
            text.push('\n');
        }
        text.push_str(&tail);
        Some(text)
    }

    /// The bytes this capture holds, allocated capacity included.
    #[cfg(test)]
    pub(super) fn retained_bytes(&self) -> usize {
        self.carry.capacity()
            + self.head.capacity()
            + self.tail.capacity()
            + self.pending_text.capacity()
    }
}

fn count(text: &str) -> u64 {
    u64::try_from(text.chars().count()).unwrap_or(u64::MAX)
}

/// Appends `text` to `buffer`, keeping at least its last `keep` bytes (cut at a character
/// boundary) and at most `2 × keep + 3` once it has grown past that.
fn keep_end(buffer: &mut String, text: &str, keep: usize) {
    if text.len() >= keep {
        buffer.clear();
        buffer.push_str(&text[floor_boundary(text, text.len() - keep)..]);
        return;
    }
    buffer.push_str(text);
    if buffer.len() > 2 * keep {
        let start = floor_boundary(buffer, buffer.len() - keep);
        buffer.drain(..start);
    }
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::Capture;

    fn capture(chunks: &[&[u8]], max_chars: usize) -> Option<String> {
        let mut capture = Capture::new(max_chars);
        for chunk in chunks {
            capture.feed(chunk);
        }
        capture.render()
    }

    #[test]
    fn a_short_stream_is_right_trimmed_and_a_blank_one_is_none() {
        assert_eq!(
            capture(&[b"  out\n", b"\n \t"], 100).as_deref(),
            Some("  out")
        );
        assert_eq!(capture(&[b" \n", b"\t"], 100), None);
        assert_eq!(capture(&[], 100), None);
        // Exactly max_chars after the trim is not cut, whatever whitespace follows.
        let spaces = " ".repeat(10_000);
        assert_eq!(
            capture(&[b"abcde", spaces.as_bytes(), b"\n"], 5).as_deref(),
            Some("abcde")
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_as_from_utf8_lossy_does_even_split_across_reads() {
        let bytes: &[u8] = b"a\xffb\xe2\x82c\xf0\x9f\x98\x80d\xe9\xe2\x82";
        let whole = String::from_utf8_lossy(bytes);
        assert_eq!(capture(&[bytes], 100).as_deref(), Some(whole.as_ref()));
        let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(capture(&one_by_one, 100).as_deref(), Some(whole.as_ref()));
        for split in 0..bytes.len() {
            let (a, b) = bytes.split_at(split);
            assert_eq!(capture(&[a, b], 100).as_deref(), Some(whole.as_ref()));
        }
        assert_eq!(whole, "a\u{FFFD}b\u{FFFD}c😀d\u{FFFD}\u{FFFD}");
    }

    #[test]
    fn a_long_stream_keeps_its_head_and_tail_and_counts_the_cut() {
        // 26 letters, max 10: the first 8, 16 cut, the last 2.
        let letters = b"abcdefghijklmnopqrstuvwxyz";
        assert_eq!(
            capture(&[letters], 10).as_deref(),
            Some("abcdefgh\n... [16 characters cut] ...\nyz")
        );
        let one_by_one: Vec<&[u8]> = letters.chunks(1).collect();
        assert_eq!(
            capture(&one_by_one, 10).as_deref(),
            Some("abcdefgh\n... [16 characters cut] ...\nyz")
        );
        // One character over: the tail reaches back into the head.
        assert_eq!(
            capture(&[b"abcdefghijk  \n"], 10).as_deref(),
            Some("abcdefgh\n... [1 character cut] ...\njk")
        );
        // Whitespace inside the cut is counted; whitespace at the end is trimmed.
        assert_eq!(
            capture(&[b"0123456789", b"    ", b"x", b"  \n\n"], 10).as_deref(),
            Some("01234567\n... [5 characters cut] ...\n x")
        );
        // Characters, not bytes; the line breaks at the cut are the output's own.
        assert_eq!(
            capture(&["é\n".repeat(100).as_bytes()], 10).as_deref(),
            Some("é\né\né\né\n... [189 characters cut] ...\né")
        );
        // Too small for a tail: the head and the count only.
        assert_eq!(
            capture(&[b"abcdef"], 3).as_deref(),
            Some("abc\n... [3 characters cut] ...")
        );
        assert_eq!(
            capture(&[b"abc"], 0).as_deref(),
            Some("... [3 characters cut] ...")
        );
    }

    #[test]
    fn what_a_capture_holds_stays_bounded_however_much_is_fed() {
        let max_chars = 1_000;
        let mut capture = Capture::new(max_chars);
        let lines = "y\n".repeat(32 * 1024);
        let spaces = " ".repeat(64 * 1024);
        let wide = "😀".repeat(16 * 1024);
        let mut most = 0;
        for round in 0..600 {
            let chunk = match round % 3 {
                0 => lines.as_bytes(),
                1 => spaces.as_bytes(),
                _ => wide.as_bytes(),
            };
            // An odd split, so characters are cut between reads.
            let (a, b) = chunk.split_at(chunk.len() / 2 + 1);
            capture.feed(a);
            capture.feed(b);
            most = most.max(capture.retained_bytes());
        }
        // About 40 MB fed. The head holds at most 4 bytes a character, each of the two tail
        // buffers less than 3 × (4 × 200 + 3) bytes; a String's capacity may be up to twice
        // its length.
        let bound = 2 * 4 * max_chars + 2 * 2 * 3 * (4 * 200 + 3) + 64;
        assert!(most <= bound, "held {most} bytes, bound {bound}");
        let text = capture.render().unwrap();
        assert!(text.chars().count() <= max_chars + 40, "{}", text.len());
        assert!(text.ends_with('😀'));
    }
}
