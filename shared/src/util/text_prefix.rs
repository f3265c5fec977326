//! Prefixes of untrusted text, for the bounds docs/guarantees.md names: by bytes where a
//! size limit is in bytes (stored results, artifacts, metadata), by characters where a person
//! reads it (error messages, feed descriptions). Both end on a character, never inside one.

/// The longest prefix of `text` of at most `max` bytes.
pub fn byte_prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The first `max` characters of `text` (all of it when shorter).
pub fn char_prefix(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_prefixes_end_on_a_character() {
        assert_eq!(byte_prefix("aé", 2), "a");
        assert_eq!(byte_prefix("aé", 3), "aé");
        assert_eq!(byte_prefix("ab", 9), "ab");
        assert_eq!(byte_prefix("", 3), "");
    }

    #[test]
    fn char_prefixes_count_characters() {
        assert_eq!(char_prefix("aéz", 2), "aé");
        assert_eq!(char_prefix("aé", 2), "aé");
        assert_eq!(char_prefix("aé", 0), "");
        assert_eq!(char_prefix("", 3), "");
    }
}
