//! Model-facing tool names: what every vendor accepts (OpenAI's `[A-Za-z0-9_-]{1,64}` is the
//! strictest), derived from the name the server gave.

/// The longest name a vendor accepts.
pub(crate) const MAX_NAME_LEN: usize = 64;

/// True when `name` is `[A-Za-z0-9_-]{1,64}`.
pub(crate) fn is_model_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The name a model sees for the server's tool `name`: the same when it is already safe;
/// else every other character becomes `_`, and a name still too long is cut to 55 characters
/// plus `_` and a hash of the whole original name, so two long names stay apart.
pub(crate) fn model_name(name: &str) -> String {
    use std::fmt::Write as _;
    if is_model_safe(name) {
        return name.to_owned();
    }
    let mut safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        safe.push_str("tool");
    }
    if safe.len() > MAX_NAME_LEN {
        // Every character is ASCII here, so byte truncation is a character boundary.
        safe.truncate(MAX_NAME_LEN - 9);
        let _ = write!(safe, "_{:08x}", fnv1a(name));
    }
    safe
}

/// FNV-1a, 32 bits: stable across runs and versions, unlike the std hasher.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names_are_kept() {
        assert_eq!(model_name("read_file"), "read_file");
        assert_eq!(model_name("a-b_C9"), "a-b_C9");
        let longest = "x".repeat(64);
        assert_eq!(model_name(&longest), longest);
    }

    #[test]
    fn unsafe_characters_become_underscores() {
        assert_eq!(model_name("files.read"), "files_read");
        assert_eq!(model_name("get weather"), "get_weather");
        assert_eq!(model_name("wetter_für_köln"), "wetter_f_r_k_ln");
        assert_eq!(model_name(""), "tool");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash_that_keeps_them_apart() {
        let a = format!("{}_alpha", "n".repeat(70));
        let b = format!("{}_beta", "n".repeat(70));
        let (ma, mb) = (model_name(&a), model_name(&b));
        assert_eq!(ma.len(), 64);
        assert_eq!(mb.len(), 64);
        assert_ne!(ma, mb);
        assert!(is_model_safe(&ma) && is_model_safe(&mb));
        assert_eq!(ma, model_name(&a), "stable");
        assert_eq!(&ma[..55], &"n".repeat(55));
        // A hash of the original name: pinned so it stays stable across releases.
        assert_eq!(fnv1a("hello"), 0x4f9f_2cab);
    }
}
