//! For tests: a source file's statements as D1 reads them.

/// `source` (a file of this crate) with its string literals' line continuations joined and
/// quotes unescaped, so a test can find a statement's text in it as D1 reads it.
#[cfg(test)]
pub(crate) fn written(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match after.chars().next() {
            Some('\n') => rest = after.trim_start(),
            Some('"') => {
                out.push('"');
                rest = &after[1..];
            }
            _ => {
                out.push('\\');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::written;

    #[test]
    fn written_joins_continued_lines_and_unescapes_quotes() {
        let source = "\"SELECT a AS \\\"a!\\\", \\\n         b FROM t\"";
        assert_eq!(written(source), "\"SELECT a AS \"a!\", b FROM t\"");
    }
}
