//! What statements share beyond their own literal: the condition pauses.rs splices (until its
//! statements are written out too), and, for tests, a source file's statements as written.

/// True for a `jobs` row that a pause covers (`jobs::releasable`). It begins with whether
/// anything at all is paused (nearly never), which depends on no row, so SQLite reads it once
/// per statement: with no pause at all, no row looks up the pauses of its type and family. The
/// claim, the release of held jobs and priority aging write it out.
pub(crate) const PAUSED_JOB_SQL: &str = "(EXISTS (SELECT 1 FROM pauses) AND \
     EXISTS (SELECT 1 FROM pauses p WHERE \
     (p.kind = 'type' AND p.name = jobs.type) OR (p.kind = 'family' AND p.name = jobs.family)))";

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
