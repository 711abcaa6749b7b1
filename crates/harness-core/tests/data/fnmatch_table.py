#!/usr/bin/env python3
"""Writes fnmatch_table.jsonl: rows of [pattern, text, matches] from Python's own
fnmatch.fnmatchcase, the reference the permission matcher is held to
(crates/harness-core/tests/permission_globs.rs). Deterministic: the same seed gives the
same table (CPython 3.11.7 wrote the committed one). Run from this directory:
    python3 fnmatch_table.py > fnmatch_table.jsonl
"""
import fnmatch
import json
import random
import sys

SEED = 20261201
PATTERN_ALPHABET = list("abcz-!^][*?\\/ é")
TEXT_ALPHABET = list("abcz-!^][\\/ é\n*?")

# Cases a reader checks by eye: the rule examples, ** as two stars, classes, ranges,
# negation, a lone [ as a literal, reversed ranges, ] first in a class.
HAND_PICKED = [
    ("*rm -rf**", ["rm -rf /", "sudo rm -rf ~", "rm -r f", "echo rm -rf"]),
    ("git log*", ["git log", "git log --oneline", "git push", " git log"]),
    ("**", ["", "a", "a/b/c"]),
    ("a**b", ["ab", "a/x/b", "ba"]),
    ("read_*", ["read_file", "Read_file", "read_"]),
    ("?ead_file", ["read_file", "ead_file"]),
    ("[rw]*", ["write_file", "read", "x"]),
    ("[!rw]*", ["write_file", "x"]),
    ("[abc", ["[abc", "a", "abc"]),
    ("[]]", ["]", "a"]),
    ("[!]]", ["]", "a"]),
    ("[]-a]", ["]", "^", "a", "-"]),
    ("[z-a]", ["z", "a", "m", "-"]),
    ("[!z-a]", ["z", "a", "m"]),
    ("[a-c-e]", ["b", "d", "-", "e"]),
    ("[a-]", ["a", "-", "b"]),
    ("[-a]", ["-", "a"]),
    ("[^a]", ["^", "a", "b"]),
    ("[!]", ["[!]", "!"]),
    ("[]", ["[]", ""]),
    ("a\\*b", ["a\\xb", "a*b"]),
    ("*.py", ["x.py", "dir/x.py", "x.pyc"]),
    ("a?c", ["abc", "a\nc", "ac"]),
    ("[a-z]*[0-9]", ["ab1", "a", "1"]),
    ("[[]abc", ["[abc"]),
    ("x[!a-c]y", ["xdy", "xby", "x-y"]),
    ("é*", ["é", "éa", "e"]),
]


def instance(pattern, rng):
    """A text shaped like the pattern: each * some characters, each ? one, each [ the
    character after it, the rest as written. Many of them match."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.extend(rng.choice(TEXT_ALPHABET) for _ in range(rng.randint(0, 3)))
        elif c == "?":
            out.append(rng.choice(TEXT_ALPHABET))
        elif c == "[" and i + 1 < len(pattern) and rng.random() < 0.7:
            i += 1
            out.append(pattern[i] if pattern[i] != "!" else rng.choice(TEXT_ALPHABET))
            close = pattern.find("]", i + 1)
            if close > 0:
                i = close
        else:
            out.append(c)
        i += 1
    return "".join(out)


def rows():
    for pattern, texts in HAND_PICKED:
        for text in texts:
            yield pattern, text
    rng = random.Random(SEED)
    for _ in range(6000):
        pattern = "".join(rng.choice(PATTERN_ALPHABET) for _ in range(rng.randint(0, 8)))
        for _ in range(3):
            roll = rng.random()
            if roll < 0.5:
                text = instance(pattern, rng)
            elif roll < 0.75:
                # A text built from the pattern's own characters matches more often.
                pool = [c for c in pattern if c not in "*?"] or TEXT_ALPHABET
                text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 8)))
            else:
                text = "".join(rng.choice(TEXT_ALPHABET) for _ in range(rng.randint(0, 8)))
            yield pattern, text


def main():
    seen = set()
    for pattern, text in rows():
        if (pattern, text) in seen:
            continue
        seen.add((pattern, text))
        matches = fnmatch.fnmatchcase(text, pattern)
        sys.stdout.write(json.dumps([pattern, text, matches], ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
