//! Shell-style patterns with exactly the meaning of Python's `fnmatch.fnmatchcase`, the
//! matcher the original library's permission rules use, and a check for patterns that
//! cannot mean what they say.
//!
//! Written here because no crate has these semantics whole: `glob` refuses `**` anywhere
//! but a path component (and the old fallback then matched such a rule only literally, so a
//! deny rule `*rm -rf**` never fired), and `globset` treats `/` and `\` specially. The rules,
//! as `fnmatch.translate` writes them:
//!
//! - `*` is any run of characters, `/` and newlines included (`**` is two of them);
//!   `?` is any one character.
//! - `[seq]` is one character of `seq`, `[!seq]` one that is not. A `]` first in the class
//!   (after the `!`) belongs to it. Ranges `a-z`; a `-` first or last is itself; in
//!   `a-c-e` the second `-` is a character. A reversed range (`z-a`) is dropped; a class
//!   left empty matches nothing, and `[!]` with nothing left matches any character.
//! - A `[` with no `]` after it is a plain `[`; so is any other character, `\` included.
//! - Matching is case-sensitive and covers the whole text.

use std::fmt::Write as _;

/// One step of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// Any run of characters.
    Star,
    /// Any one character.
    Any,
    /// This character.
    Char(char),
    /// One character in (or, negated, not in) the class.
    Class {
        negated: bool,
        singles: Vec<char>,
        ranges: Vec<(char, char)>,
    },
    /// Nothing matches (a class every range of which was reversed).
    Never,
}

impl Token {
    fn matches(&self, c: char) -> bool {
        match self {
            Self::Star | Self::Any => true,
            Self::Char(want) => *want == c,
            Self::Class {
                negated,
                singles,
                ranges,
            } => {
                let inside =
                    singles.contains(&c) || ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
                inside != *negated
            }
            Self::Never => false,
        }
    }
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pattern {
    tokens: Vec<Token>,
    /// What in the pattern cannot mean what it says, in words; empty when all is well.
    problems: Vec<String>,
}

impl Pattern {
    /// Compiles `source` with fnmatch's meaning. Never fails: what fnmatch reads literally
    /// is read literally here too, and noted in [`Pattern::problems`].
    pub(crate) fn new(source: &str) -> Self {
        let chars: Vec<char> = source.chars().collect();
        let mut tokens = Vec::new();
        let mut problems = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            match c {
                '*' => {
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                }
                '?' => tokens.push(Token::Any),
                '[' => match class_end(&chars, i) {
                    None => {
                        problems.push(format!(
                            "the `[` at character {i} opens a class that never closes, so it \
                             would match only a literal `[` (write `[[]` for that)"
                        ));
                        tokens.push(Token::Char('['));
                    }
                    Some(end) => {
                        tokens.push(class(&chars[i..end], &mut problems));
                        i = end + 1;
                    }
                },
                other => tokens.push(Token::Char(other)),
            }
        }
        Self { tokens, problems }
    }

    /// What in the pattern cannot mean what it says: an unclosed `[` (read as a literal), a
    /// reversed range such as `z-a` (dropped), a class that matches nothing.
    pub(crate) fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Whether the whole of `text` matches.
    pub(crate) fn matches(&self, text: &str) -> bool {
        // The classic wildcard walk: every token but `*` takes exactly one character, so
        // on a mismatch it is enough to let the last `*` take one character more.
        let text: Vec<char> = text.chars().collect();
        let (mut t, mut p) = (0, 0);
        let mut resume: Option<(usize, usize)> = None;
        while t < text.len() {
            match self.tokens.get(p) {
                Some(Token::Star) => {
                    resume = Some((p, t));
                    p += 1;
                }
                Some(token) if token.matches(text[t]) => {
                    p += 1;
                    t += 1;
                }
                _ => match resume {
                    Some((star, from)) => {
                        p = star + 1;
                        t = from + 1;
                        resume = Some((star, from + 1));
                    }
                    None => return false,
                },
            }
        }
        self.tokens[p..].iter().all(|token| *token == Token::Star)
    }
}

/// Where the class opened just before `start` closes, as fnmatch finds it: a `!` and then a
/// `]` right after the opening belong to the class.
fn class_end(chars: &[char], start: usize) -> Option<usize> {
    let mut j = start;
    if chars.get(j) == Some(&'!') {
        j += 1;
    }
    if chars.get(j) == Some(&']') {
        j += 1;
    }
    (j..chars.len()).find(|&k| chars[k] == ']')
}

/// The class whose body (between `[` and `]`) is `body`, as `fnmatch.translate` builds it.
fn class(body: &[char], problems: &mut Vec<String>) -> Token {
    // Split at the `-`s that make ranges: never the first character (after a `!`), and
    // never the character right after a range's end.
    let mut chunks: Vec<Vec<char>> = Vec::new();
    let mut from = 0;
    let mut search = if body.first() == Some(&'!') { 2 } else { 1 };
    while let Some(dash) = (search..body.len()).find(|&k| body[k] == '-') {
        chunks.push(body[from..dash].to_vec());
        from = dash + 1;
        search = dash + 3;
    }
    let last = body.get(from..).unwrap_or_default().to_vec();
    match chunks.last_mut() {
        Some(previous) if last.is_empty() => previous.push('-'),
        _ => chunks.push(last),
    }
    // Drop reversed ranges, from the end, joining what stood around them.
    for k in (1..chunks.len()).rev() {
        let (Some(&lo), Some(&hi)) = (chunks[k - 1].last(), chunks[k].first()) else {
            continue;
        };
        if lo > hi {
            problems.push(format!(
                "the range `{lo}-{hi}` in `[{}]` runs backwards, so it matches nothing",
                body.iter().collect::<String>()
            ));
            let tail: Vec<char> = chunks[k][1..].to_vec();
            chunks[k - 1].pop();
            chunks[k - 1].extend(tail);
            chunks.remove(k);
        }
    }
    let mut singles: Vec<char> = Vec::new();
    let mut ranges: Vec<(char, char)> = Vec::new();
    for (k, chunk) in chunks.iter().enumerate() {
        let start = usize::from(k > 0);
        let end = if k + 1 < chunks.len() {
            chunk.len().saturating_sub(1)
        } else {
            chunk.len()
        };
        if k > 0
            && let (Some(&lo), Some(&hi)) = (chunks[k - 1].last(), chunk.first())
        {
            ranges.push((lo, hi));
        }
        singles.extend(chunk.get(start..end.max(start)).unwrap_or_default());
    }
    // A `!` first in the class negates it (it is always a single there: a range never
    // starts at the class's first character).
    let negated =
        chunks.first().and_then(|c| c.first()) == Some(&'!') && singles.first() == Some(&'!');
    if negated {
        singles.remove(0);
    }
    if singles.is_empty() && ranges.is_empty() {
        if negated {
            return Token::Any;
        }
        let mut shown = String::new();
        let _ = write!(shown, "[{}]", body.iter().collect::<String>());
        problems.push(format!("the class `{shown}` matches no character"));
        return Token::Never;
    }
    Token::Class {
        negated,
        singles,
        ranges,
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn stars_questions_and_classes() {
        let cases = [
            ("*rm -rf**", "sudo rm -rf /", true),
            ("*rm -rf**", "rm -r f", false),
            ("read_*", "read_file", true),
            ("read_*", "Read_file", false),
            ("?ead_file", "read_file", true),
            ("[rw]*", "write_file", true),
            ("[!rw]*", "write_file", false),
            ("a*", "a/b/c", true),
            ("[abc", "[abc", true),
            ("[]]", "]", true),
            ("[z-a]", "m", false),
            ("[!z-a]", "m", true),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                Pattern::new(pattern).matches(text),
                expected,
                "{pattern} ~ {text}"
            );
        }
    }

    #[test]
    fn what_cannot_mean_what_it_says_is_named() {
        assert!(Pattern::new("*rm -rf**").problems().is_empty());
        assert_eq!(
            Pattern::new("ab[cd").problems(),
            [
                "the `[` at character 3 opens a class that never closes, so it would match only \
              a literal `[` (write `[[]` for that)"
            ]
        );
        assert_eq!(
            Pattern::new("[z-a]").problems(),
            [
                "the range `z-a` in `[z-a]` runs backwards, so it matches nothing",
                "the class `[z-a]` matches no character"
            ]
        );
    }
}
